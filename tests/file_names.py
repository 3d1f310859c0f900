"""File names and paths of exact sizes in UTF-8 bytes, mostly CJK (3 bytes a character), for
the limits of object keys: a part of a path at most 255 bytes, a whole key at most the store's
``max_key_bytes``."""

from __future__ import annotations

MAX_PART_BYTES = 255


def name_of(size: int) -> str:
    """A file name of exactly ``size`` bytes."""
    return "数" * (size // 3) + "x" * (size % 3)


def path_of(size: int) -> str:
    """A path of exactly ``size`` bytes in parts of 255 bytes but the last (never empty)."""
    parts, left = [], size
    while left > 0:
        part = left if left <= MAX_PART_BYTES else 254 if left == 256 else MAX_PART_BYTES
        parts.append(name_of(part))
        left -= part + 1  # and the "/" before the next part
    return "/".join(parts)
