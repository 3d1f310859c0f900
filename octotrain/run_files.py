"""One door to a run's files, whatever holds them: the run folder of the machine that runs its
nodes, the object store, or the folder while the run is live and the store after.

Files are addressed only by ``RunObjects`` keys (``octotrain/run_layout.py``), the one spelling
of a run's files; each holder maps a key to where it keeps it. The adapters are in
``hooks/runs/run_files.py``, and the configured launcher says which one holds a run's files
(``octotrain.launcher.Launcher.run_files``), so no reader guesses by looking for a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from octotrain.run_layout import RunObjects
from octotrain.storage import ObjectInfo


class RunFiles(Protocol):
    """A run's files by key: small documents read and written whole, logs and samples read by
    ranges; every write is whole (a reader never sees half a file)."""

    objects: RunObjects
    # Where the files are, in words ("run folder", "object store"): what a listing shows.
    where: str

    def holder(self, key: str) -> RunFiles:
        """The holder that has ``key`` (a file, or a folder's files): itself, or the one of
        two it reads first (``hooks.runs.run_files.LiveThenStoreRunFiles``)."""

    def read(self, key: str) -> bytes | None:
        """The whole file, or None when there is none."""

    def write(self, key: str, data: bytes) -> None:
        """Write the whole file, replacing it."""

    def create(self, key: str, data: bytes) -> bool:
        """Write the file unless it exists: the first writer wins (an abort flag, a restart's
        request). True when this write is the one that stands."""

    def size(self, key: str) -> int | None:
        """The file's size in bytes, or None when there is none."""

    def read_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``start`` up to ``end`` (exclusive, clipped to the size) of the file."""

    def list(self, prefix: str) -> list[ObjectInfo]:
        """Every file under the key ``prefix`` (a folder of the run), with its size and time."""

    def address(self, key: str) -> str:
        """The file's address, one per file in this process (its path, or the store's URL and
        its key): what a cache of what was read of it is keyed by."""

    def local_path(self, key: str) -> Path | None:
        """Where the file can be read in place on this machine, or None (a remote store, or no
        such file)."""


def read_text(files: RunFiles, key: str) -> str | None:
    data = files.read(key)
    return None if data is None else data.decode("utf-8", errors="replace")


def read_json(files: RunFiles, key: str) -> Any:
    text = read_text(files, key)
    return None if text is None else json.loads(text)


def write_json(files: RunFiles, key: str, document: Any) -> None:
    files.write(key, json.dumps(document, ensure_ascii=False).encode("utf-8"))


def tail(files: RunFiles, key: str, count: int) -> bytes:
    """The file's last ``count`` bytes; nothing when there is no such file."""
    size = files.size(key)
    return b"" if size is None else files.read_range(key, max(0, size - count), size)
