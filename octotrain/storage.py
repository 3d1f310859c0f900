"""The object-store interface the domain relies on; its backends are in ``hooks/object_store``.

Keys are ``/``-separated paths (``datasets/demo/iris/v1/train.csv``). The catalog services take
a store as an argument (they upload imported files and copy dataset versions into caches), so
they depend on this interface only, never on a backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    modified: float


class ObjectStoreError(RuntimeError):
    """The object store refused or failed an operation; the message names the key."""


class ObjectStore(Protocol):
    url: str

    def put_file(self, key: str, source: Path) -> ObjectInfo: ...
    def get_file(self, key: str, destination: Path) -> None: ...
    def list(self, prefix: str) -> list[ObjectInfo]: ...
    def delete_prefix(self, prefix: str) -> int: ...
    def copy_prefix(self, source: str, destination: str) -> int: ...


def validate_key(key: str) -> str:
    """Refuse keys that could escape the store (``..``, absolute, empty parts)."""
    path = PurePosixPath(key)
    if not key or path.is_absolute() or any(part in ("", ".", "..") for part in key.split("/")):
        raise ObjectStoreError(f"invalid object key {key!r}")
    return key


def prefix_of(prefix: str) -> str:
    """``prefix`` as a folder-like key prefix ending in ``/``."""
    return validate_key(prefix.rstrip("/")) + "/"
