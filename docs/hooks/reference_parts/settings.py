"""The ``settings`` part (docs/reference/configuration.md): every key of
``config/defaults.toml``, the file the settings are read from: its environment variable, its
default, the rule its value must meet (``octotrain.settings.Settings``) and the comment above
it in the file."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .markdown import cell


def settings_reference() -> str:
    """Every key of ``config/defaults.toml``, in its order, with what the file says of it."""
    import tomllib

    from octotrain.settings import DEFAULTS_FILE, ENV_PREFIX, Settings

    text = DEFAULTS_FILE.read_text(encoding="utf-8")
    defaults = tomllib.loads(text)
    rows = ["| variable | default | rule | meaning |", "|---|---|---|---|"]
    for key, comment in commented_keys(text):
        value = defaults[key]
        shown = "(empty)" if value == "" else f"`{value}`"
        rule = _rule(Settings.model_fields[key])
        rows.append(f"| `{ENV_PREFIX}{key.upper()}` | {shown} | {rule} | {cell(comment)} |")
    return "\n".join(rows) + "\n"


def commented_keys(text: str) -> Iterator[tuple[str, str]]:
    """Each ``key = value`` line's key with the comment block above it (a block stays with the
    keys that follow it until a blank line)."""
    comment: list[str] = []
    keys_seen = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            comment, keys_seen = [], False
        elif stripped.startswith("#"):
            if keys_seen:  # a new block inside a group of keys
                comment, keys_seen = [], False
            comment.append(stripped.lstrip("#").strip())
        elif "=" in stripped:
            keys_seen = True
            yield stripped.split("=", 1)[0].strip(), " ".join(comment)


def _rule(field: Any) -> str:
    """What a setting's value must be, from its field in ``Settings``."""
    import typing

    words = []
    choices = typing.get_args(field.annotation)
    if typing.get_origin(field.annotation) is typing.Literal:
        words.append("one of " + ", ".join(f"`{choice}`" for choice in choices))
    else:
        words.append(getattr(field.annotation, "__name__", str(field.annotation)))
    for bound in field.metadata:
        for attribute, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤"),
                                ("min_length", "length ≥"), ("pattern", "matches")):  # fmt: skip
            value = getattr(bound, attribute, None)
            if value is not None:
                words.append(f"{sign} `{value}`" if attribute == "pattern" else f"{sign} {value}")
    return cell(", ".join(words))
