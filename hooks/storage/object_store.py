"""The door to the object store, where datasets, model versions and collected logs live.

``OCTOTRAIN_OBJECT_STORE_URL`` names it: ``file://<folder>`` (the embedded default,
``hooks/storage/local_store``) or ``s3://<bucket>[/<prefix>]?conn_id=<id>`` (MinIO or S3,
``hooks/storage/s3_store``). Both implement ``octotrain.storage.ObjectStore``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from hooks.storage.local_store import LocalFolderStore
from octotrain.settings import get_settings
from octotrain.storage import ObjectInfo, ObjectStore, ObjectStoreError, prefix_of

if TYPE_CHECKING:
    from hooks.storage.s3_store import S3Store


def object_store_from_url(url: str) -> ObjectStore:
    """The store named by an ``OCTOTRAIN_OBJECT_STORE_URL``."""
    if url.startswith("file://"):
        return LocalFolderStore(Path(url.removeprefix("file://")))
    if url.startswith("s3://"):
        return _s3_store(url)
    raise ObjectStoreError(f"object store {url!r}: use file://<folder> or s3://<bucket>")


@lru_cache(maxsize=8)
def _s3_store(url: str) -> S3Store:
    """One client (and transfer manager, with its connections) per bucket URL per process.

    Imported here, not at the top: boto3 takes 0.6 s to import, which every task process
    would otherwise pay when it parses the DAG file (bench.trigger), S3 or not."""
    from hooks.storage.s3_store import s3_store_from_url

    settings = get_settings()
    return s3_store_from_url(
        url,
        attempts=settings.object_store_attempts,
        first_wait_seconds=settings.object_store_retry_wait_seconds,
    )


def default_object_store() -> ObjectStore:
    return object_store_from_url(get_settings().object_store_url)


def upload_folder(
    store: ObjectStore, folder: Path, prefix: str, *, skip: Path | None = None
) -> list[ObjectInfo]:
    """Upload every file under ``folder`` to ``prefix``, keeping relative paths; none of
    ``skip``'s (a folder below it)."""
    uploaded = []
    for path in sorted(folder.rglob("*")):
        if skip is not None and path.is_relative_to(skip):
            continue
        if path.is_file():
            uploaded.append(
                store.put_file(prefix_of(prefix) + path.relative_to(folder).as_posix(), path)
            )
    return uploaded
