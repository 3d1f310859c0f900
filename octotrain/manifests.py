"""Manifests: what files a dataset version, data cache or model version holds, with the size
and checksum (BLAKE3) recorded when each was written; and the digest of a manifest, which names the
content itself (two versions with the same files have the same digest)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from octotrain.storage import ObjectInfo, prefix_of

Manifest = dict[str, dict[str, Any]]


def manifest_of(written: Iterable[ObjectInfo], prefix: str) -> Manifest:
    """The manifest of objects just written under ``prefix`` (with their checksums)."""
    base = prefix_of(prefix)
    manifest: Manifest = {}
    for info in written:
        if not info.key.startswith(base) or not info.checksum:
            raise ValueError(f"{info.key} was not written under {base} with a checksum")
        manifest[info.key[len(base) :]] = {"size": info.size, "blake3": info.checksum}
    return dict(sorted(manifest.items()))


def content_digest(manifest: Manifest) -> str:
    """SHA-256 over the sorted (path, size, checksum) entries."""
    digest = hashlib.sha256()
    for path, entry in sorted(manifest.items()):
        digest.update(f"{path}\0{entry['size']}\0{entry['blake3']}\n".encode())
    return digest.hexdigest()


def total_size(manifest: Manifest) -> int:
    return sum(int(entry["size"]) for entry in manifest.values())
