"""Writing the objects of a new version (a dataset import, a model import, a data cache) so
that they exist exactly when the version's row does, with their manifest recorded.

The caller first adds and flushes the row: that claims its unique name or number, so no other
request can be writing under the same prefix. The objects are then written straight under the
row's prefix, and removed again if the catalog transaction rolls back for any reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from octotrain.catalog.models import StoredFiles
from octotrain.catalog.transactions import on_rollback
from octotrain.errors import Conflict, FieldProblem, InvalidInput
from octotrain.manifests import Manifest, manifest_of
from octotrain.storage import ObjectStore

MAX_FILES = 100_000
UPLOAD_CONCURRENCY = 8


def check_files(files: Mapping[str, Path], field: str = "files") -> None:
    """Every relative path must stay inside the version; at least one file is needed."""
    if not files:
        raise InvalidInput.one(field, "at least one file is needed")
    if len(files) > MAX_FILES:
        raise InvalidInput.one(field, f"at most {MAX_FILES} files, got {len(files)}")
    problems = []
    for relative in files:
        path = PurePosixPath(relative)
        if (
            not relative
            or "\\" in relative
            or "\x00" in relative
            or path.is_absolute()
            or any(part in ("", ".", "..") for part in relative.split("/"))
        ):
            problems.append(
                FieldProblem(
                    f"{field}.{relative}", "must be a relative path without '..' or empty parts"
                )
            )
    if problems:
        raise InvalidInput(problems)


def fill_claimed_prefix(
    session: Session, store: ObjectStore, prefix: str, write: Callable[[], Manifest]
) -> Manifest:
    """Run ``write`` to fill ``prefix``, which a flushed row of ``session`` has just claimed;
    return the manifest of what it wrote."""
    on_rollback(session, lambda: store.delete_prefix(prefix))
    # Left over by a process that died between writing and its rollback; the prefix is ours.
    store.delete_prefix(prefix)
    try:
        return write()
    except BaseException:
        store.delete_prefix(prefix)
        raise


def add_with_objects(
    session: Session,
    store: ObjectStore,
    row: StoredFiles,
    write: Callable[[str], Manifest],
    *,
    taken: str,
) -> None:
    """Add ``row`` (a dataset or model version), claim it, fill its prefix with
    ``write(prefix)`` and record the manifest of what was written.

    ``taken`` is the message when another request claimed the same name or number first.
    """
    session.add(row)
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(taken) from None
    prefix = row.object_prefix
    row.record(fill_claimed_prefix(session, store, prefix, lambda: write(prefix)))
    session.flush()


def upload_files(store: ObjectStore, files: Mapping[str, Path], prefix: str) -> Manifest:
    """Upload ``files`` (relative path → local file) under ``prefix``, several at a time."""
    with ThreadPoolExecutor(max_workers=UPLOAD_CONCURRENCY) as pool:
        written = list(
            pool.map(
                lambda item: store.put_file(f"{prefix}/{item[0]}", item[1]), sorted(files.items())
            )
        )
    return manifest_of(written, prefix)
