"""The door to the object store, where datasets, model versions and collected logs live.

Keys are ``/``-separated paths (``datasets/demo/iris/v1/train.csv``). The embedded default is a
local folder; a MinIO/S3 backend implements the same interface (``octotrain.storage``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from octotrain.settings import get_settings
from octotrain.storage import ObjectInfo, ObjectStore, ObjectStoreError, prefix_of, validate_key

COPY_CHUNK = 8 * 1024 * 1024
# Marks a file being written; such files are not objects yet and are never listed.
PARTIAL_MARKER = ".octotrain-partial-"


class LocalFolderStore:
    """Objects as files under a root folder. Writes go to a temporary name first and are
    renamed into place, so a reader never sees half an object."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.url = f"file://{self.root}"

    def _path(self, key: str) -> Path:
        return self.root / validate_key(key)

    def put_file(self, key: str, source: Path) -> ObjectInfo:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}{PARTIAL_MARKER}{os.getpid()}")
        try:
            shutil.copyfile(source, partial)
            partial.replace(target)
        except OSError as error:
            partial.unlink(missing_ok=True)
            raise ObjectStoreError(f"cannot write {key}: {error}") from error
        stat = target.stat()
        return ObjectInfo(key=key, size=stat.st_size, modified=stat.st_mtime)

    def get_file(self, key: str, destination: Path) -> None:
        source = self._path(key)
        if not source.is_file():
            raise ObjectStoreError(f"object {key} does not exist in {self.url}")
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)

    def list(self, prefix: str) -> list[ObjectInfo]:
        base = self._path(prefix.rstrip("/"))
        if not base.is_dir():
            return []
        found = []
        for path in sorted(base.rglob("*")):
            if path.is_file() and PARTIAL_MARKER not in path.name:
                stat = path.stat()
                key = path.relative_to(self.root).as_posix()
                found.append(ObjectInfo(key=key, size=stat.st_size, modified=stat.st_mtime))
        return found

    def delete_prefix(self, prefix: str) -> int:
        base = self._path(prefix_of(prefix).rstrip("/"))
        if not base.exists():
            return 0
        count = sum(1 for path in base.rglob("*") if path.is_file())
        shutil.rmtree(base)
        return count

    def copy_prefix(self, source: str, destination: str) -> int:
        objects = self.list(source)
        source_prefix = prefix_of(source)
        for info in objects:
            relative = info.key[len(source_prefix) :]
            self.put_file(prefix_of(destination) + relative, self._path(info.key))
        return len(objects)


def object_store_from_url(url: str) -> ObjectStore:
    """The store named by an ``OCTOTRAIN_OBJECT_STORE_URL``."""
    if url.startswith("file://"):
        return LocalFolderStore(Path(url.removeprefix("file://")))
    raise ObjectStoreError(
        f"object store {url!r}: only file:// is available in this version; "
        "the MinIO/S3 backend is not implemented yet"
    )


def default_object_store() -> ObjectStore:
    return object_store_from_url(get_settings().object_store_url)


def upload_folder(store: ObjectStore, folder: Path, prefix: str) -> list[ObjectInfo]:
    """Upload every file under ``folder`` to ``prefix``, keeping relative paths."""
    uploaded = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            uploaded.append(
                store.put_file(prefix_of(prefix) + path.relative_to(folder).as_posix(), path)
            )
    return uploaded


def download_prefix(store: ObjectStore, prefix: str, folder: Path) -> list[ObjectInfo]:
    """Download every object under ``prefix`` into ``folder``, keeping relative paths."""
    objects = store.list(prefix)
    base = prefix_of(prefix)
    for info in objects:
        store.get_file(info.key, folder / info.key[len(base) :])
    return objects


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(COPY_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
