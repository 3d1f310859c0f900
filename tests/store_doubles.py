"""Object stores for fault and reuse tests: real local stores that count reads, or fail after
a given number of operations as an unreachable store would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hooks.storage.local_store import LocalFolderStore
from octotrain.storage import ObjectInfo, ObjectStoreUnavailable


class CountingStore(LocalFolderStore):
    """Counts the objects read, to tell a download from a reuse."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads = 0

    def get_file(self, key: str, destination: Path | str, **options: Any) -> ObjectInfo:
        self.reads += 1
        return super().get_file(key, destination, **options)


class CopyingStore(CountingStore):
    """Shows no folder to read in place, as a remote store: its files are copied into a node
    cache, never linked, so they need room on its disk."""

    def local_path(self, prefix: str) -> Path | None:
        return None

    def get_file(self, key: str, destination: Path | str, **options: Any) -> ObjectInfo:
        return super().get_file(key, destination, **(options | {"read_only": False}))


class FailingStore(LocalFolderStore):
    """Goes down after ``puts_left`` uploads or ``gets_left`` downloads."""

    def __init__(self, root: Path, *, puts_left: int = 10**9, gets_left: int = 10**9) -> None:
        super().__init__(root)
        self.puts_left, self.gets_left = puts_left, gets_left

    def put_file(self, key: str, source: Path) -> ObjectInfo:
        if self.puts_left <= 0:
            raise ObjectStoreUnavailable(f"cannot write {key}: connection refused")
        self.puts_left -= 1
        return super().put_file(key, source)

    def get_file(self, key: str, destination: Path | str, **options: Any) -> ObjectInfo:
        if self.gets_left <= 0:
            raise ObjectStoreUnavailable(f"cannot read {key}: connection refused")
        self.gets_left -= 1
        return super().get_file(key, destination, **options)
