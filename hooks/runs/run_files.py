"""The holders of a run's files (``octotrain.run_files.RunFiles``): the run folder on this
machine, the object store, and the folder while the run is live then the store, which is what a
local run's readers need (its nodes write the folder; ``collect_logs`` uploads it once they
have ended). Which one holds a run's files is the launcher's to say
(``octotrain.launcher.Launcher.run_files``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from octotrain.run_files import RunFiles
from octotrain.run_layout import RunLayout, RunObjects
from octotrain.storage import ObjectInfo, ObjectNotFound, ObjectStore


class FolderRunFiles:
    """The run folder (``RunLayout``): the files of the nodes that run on this machine."""

    where = "run folder"

    def __init__(self, layout: RunLayout) -> None:
        self.layout = layout
        self.objects = layout.objects

    def holder(self, key: str) -> FolderRunFiles:
        return self

    def read(self, key: str) -> bytes | None:
        try:
            return self.layout.path(key).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, key: str, data: bytes) -> None:
        path = self._partial(key, data)
        path.replace(self.layout.path(key))

    def create(self, key: str, data: bytes) -> bool:
        partial = self._partial(key, data)
        try:
            os.link(partial, self.layout.path(key))  # atomic, and whole once there
            return True
        except FileExistsError:
            return False
        finally:
            partial.unlink()

    def size(self, key: str) -> int | None:
        try:
            return self.layout.path(key).stat().st_size
        except FileNotFoundError:
            return None

    def read_range(self, key: str, start: int, end: int) -> bytes:
        with self.layout.path(key).open("rb") as handle:
            return os.pread(handle.fileno(), max(0, end - start), start)

    def list(self, prefix: str) -> list[ObjectInfo]:
        folder = self.layout.path(prefix.rstrip("/"))
        if not folder.is_dir():
            return []
        found = []
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.name.startswith("."):  # partial writes are hidden
                stat = path.stat()
                key = f"{prefix.rstrip('/')}/{path.relative_to(folder).as_posix()}"
                found.append(ObjectInfo(key=key, size=stat.st_size, modified=stat.st_mtime))
        return found

    def local_path(self, key: str) -> Path | None:
        path = self.layout.path(key)
        return path if path.is_file() else None

    def address(self, key: str) -> str:
        return str(self.layout.path(key))

    def _partial(self, key: str, data: bytes) -> Path:
        path = self.layout.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial-{os.getpid()}-{id(data)}")
        partial.write_bytes(data)
        return partial


class StoreRunFiles:
    """The object store: the files of a run whose nodes run as pods (their sidecars upload
    them), and of any run once its files are collected."""

    where = "object store"

    def __init__(self, store: ObjectStore, objects: RunObjects) -> None:
        self.store = store
        self.objects = objects

    def holder(self, key: str) -> StoreRunFiles:
        return self

    def read(self, key: str) -> bytes | None:
        """A look at its size, then its bytes: most reads find nothing (a flag not raised, a
        restart not asked for), which then costs one request."""
        size = self.size(key)
        return None if size is None else self.store.read_range(key, 0, size)

    def write(self, key: str, data: bytes) -> None:
        with tempfile.TemporaryDirectory(prefix="octotrain-run-file-") as scratch:
            path = Path(scratch) / "file"
            path.write_bytes(data)
            self.store.put_file(key, path)

    def create(self, key: str, data: bytes) -> bool:
        """Written unless there is one: two writers within the same instant may both write,
        each then reading its own (every use tolerates it: a flag or a request of the same
        meaning)."""
        if self.size(key) is not None:
            return False
        self.write(key, data)
        return True

    def size(self, key: str) -> int | None:
        try:
            return self.store.stat(key).size
        except ObjectNotFound:
            return None

    def read_range(self, key: str, start: int, end: int) -> bytes:
        return self.store.read_range(key, start, end)

    def list(self, prefix: str) -> list[ObjectInfo]:
        return self.store.list(f"{prefix.rstrip('/')}/")

    def local_path(self, key: str) -> Path | None:
        path = self.store.local_path(key)
        return path if path is not None and path.is_file() else None

    def address(self, key: str) -> str:
        return f"{self.store.url}|{key}"


class LiveThenStoreRunFiles:
    """A local run's files. While the run is live, its run folder alone: its nodes write there,
    and nothing of it is in the store yet (checkpoints aside, which are read there apart), so
    a look at a flag never costs a request. Once it has ended, the store, where
    ``collect_logs`` put them, and the folder for a file the store lacks (a run whose
    collection never came keeps its files there)."""

    def __init__(self, folder: FolderRunFiles, store: StoreRunFiles, *, live: bool) -> None:
        self.objects = folder.objects
        self.folder, self.store_files = folder, store
        self.holders: list[FolderRunFiles | StoreRunFiles] = [folder] if live else [store, folder]
        self.where = self.holders[0].where

    def holder(self, key: str) -> FolderRunFiles | StoreRunFiles:
        """The one that has ``key`` (a file, or a folder's files), the first if none has."""
        for holder in self.holders:
            if holder.size(key) is not None or holder.list(key):
                return holder
        return self.holders[0]

    def read(self, key: str) -> bytes | None:
        for holder in self.holders:
            data = holder.read(key)
            if data is not None:
                return data
        return None

    def write(self, key: str, data: bytes) -> None:
        """Written where it is read first: the run folder (which ``collect_logs`` uploads)
        while the run is live, the store after."""
        self.holders[0].write(key, data)

    def create(self, key: str, data: bytes) -> bool:
        return self.holders[0].create(key, data)

    def size(self, key: str) -> int | None:
        for holder in self.holders:
            size = holder.size(key)
            if size is not None:
                return size
        return None

    def read_range(self, key: str, start: int, end: int) -> bytes:
        return self.holder(key).read_range(key, start, end)

    def list(self, prefix: str) -> list[ObjectInfo]:
        for holder in self.holders:
            found = holder.list(prefix)
            if found:
                return found
        return []

    def local_path(self, key: str) -> Path | None:
        for holder in self.holders:
            path = holder.local_path(key)
            if path is not None:
                return path
        return None

    def address(self, key: str) -> str:
        return self.holder(key).address(key)


def folder_then_store(layout: RunLayout, store: ObjectStore, *, live: bool) -> RunFiles:
    """A local run's files: the run folder while ``live``, then ``store``."""
    return LiveThenStoreRunFiles(FolderRunFiles(layout), StoreRunFiles(store, layout.objects),
                                 live=live)  # fmt: skip
