"""The object-store interface the domain relies on; its backends are in ``hooks/``.

Keys are ``/``-separated paths (``datasets/demo/iris/v1/train.csv``). Every transfer computes
the checksum (BLAKE3) of the bytes as they pass (``ObjectInfo.checksum``), so that checksums
are recorded when objects are written (in the catalog's manifests) and verified when they are
read, without reading anything twice. The catalog services take a store as an argument, so
they depend on this interface only, never on a backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# Called with the number of bytes moved since the last call, as a transfer goes on.
Progress = Callable[[int], None]


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    modified: float
    # The BLAKE3 checksum of the content (hex), when this operation moved the bytes (put,
    # get); "" in listings, which do not read content.
    checksum: str = ""


class ObjectStoreError(RuntimeError):
    """The object store refused or failed an operation; the message names the key."""


class ObjectNotFound(ObjectStoreError):
    """No object has this key."""


class ChecksumMismatch(ObjectStoreError):
    """What was read is not what was recorded; the corrupt copy has been removed."""


class ObjectStoreUnavailable(ObjectStoreError):
    """The store could not be reached, even after retrying with backoff."""


class ObjectStore(Protocol):
    url: str
    # The longest key (in UTF-8 bytes) this store can hold: S3 counts its own prefix, a local
    # folder its root and PATH_MAX. Every part of a key is at most 255 bytes on any store.
    max_key_bytes: int
    # How many files to move at once: enough to hide a network store's latency, no more than
    # the cores where the copying and hashing are the work.
    concurrency: int

    def put_file(self, key: str, source: Path) -> ObjectInfo:
        """Upload ``source`` as ``key``; readers never see a partial object."""
        ...

    def get_file(
        self,
        key: str,
        destination: Path | str,
        *,
        checksum: str | None = None,
        progress: Progress | None = None,
        read_only: bool = False,
    ) -> ObjectInfo:
        """Download ``key`` to ``destination`` (its folder made if missing); with ``checksum``
        (BLAKE3, hex), a copy whose content differs is removed and ``ChecksumMismatch``
        raised. ``read_only``: the caller never changes the file (it keeps it read-only), so
        a store on the same file system may give it the stored file itself, not a copy."""
        ...

    def list(self, prefix: str) -> list[ObjectInfo]: ...

    def stat(self, key: str) -> ObjectInfo:
        """Size and write time of ``key`` (``ObjectNotFound`` when it does not exist)."""
        ...

    def read_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``start`` up to ``end`` (exclusive, clipped to the object's size) of ``key``,
        without reading the rest: log pages seek from either end of gigabyte files."""
        ...

    def iter_bytes(self, key: str, *, start: int = 0, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        """The content of ``key`` from ``start``, in chunks of about ``chunk_size``: streams of
        any size in constant memory (downloads, search)."""
        ...

    def send_to(self, key: str, descriptor: int, *, start: int = 0) -> int:
        """Write the content of ``key`` from ``start`` to the pipe ``descriptor`` (how many
        bytes), without bringing it through Python where the store can: a search streams a
        gigabyte log to grep this way. The pipe's reader gone, ``BrokenPipeError``."""
        ...

    def delete_prefix(self, prefix: str) -> int: ...

    def copy_prefix(self, source: str, destination: str) -> int:
        """Copy every object under ``source`` inside the store (no download)."""
        ...

    def local_path(self, prefix: str) -> Path | None:
        """A file-system path where the objects under ``prefix`` can be read in place (a local
        folder store), or None when the store is remote."""
        ...


def validate_key(key: str) -> str:
    """Refuse keys that could escape the store (``..``, absolute, empty parts)."""
    if not key or key.startswith("/") or any(part in ("", ".", "..") for part in key.split("/")):
        raise ObjectStoreError(f"invalid object key {key!r}")
    return key


def prefix_of(prefix: str) -> str:
    """``prefix`` as a folder-like key prefix ending in ``/``."""
    return validate_key(prefix.rstrip("/")) + "/"


def checked_digest(key: str, expected: str | None, actual: str, copy: Path | str) -> None:
    """Raise ``ChecksumMismatch`` (after removing ``copy``) unless ``actual`` is ``expected``."""
    if expected is not None and expected != actual:
        Path(copy).unlink(missing_ok=True)
        raise ChecksumMismatch(
            f"{key}: its content has checksum {actual}, but {expected} was recorded; "
            "the corrupt copy was removed"
        )
