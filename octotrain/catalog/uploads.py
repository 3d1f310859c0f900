"""Writing the objects of a new version (a dataset import, a model import, a data cache) so
that they exist exactly when the version's row does.

The caller first adds and flushes the row: that claims its unique name or number, so no other
request can be writing under the same prefix. The objects are then written straight under the
row's prefix, and removed again if the catalog transaction rolls back for any reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from octotrain.catalog.transactions import on_rollback
from octotrain.errors import Conflict, FieldProblem, InvalidInput
from octotrain.storage import ObjectStore

MAX_FILES = 100_000


@dataclass(frozen=True)
class Written:
    size_bytes: int
    file_count: int


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
    session: Session, store: ObjectStore, prefix: str, write: Callable[[], object]
) -> Written:
    """Run ``write`` to fill ``prefix``, which a flushed row of ``session`` has just claimed."""
    on_rollback(session, lambda: store.delete_prefix(prefix))
    # Left over by a process that died between writing and its rollback; the prefix is ours.
    store.delete_prefix(prefix)
    try:
        write()
    except BaseException:
        store.delete_prefix(prefix)
        raise
    listed = store.list(prefix)
    return Written(size_bytes=sum(info.size for info in listed), file_count=len(listed))


def add_with_objects(
    session: Session,
    store: ObjectStore,
    row: Any,
    write: Callable[[str], object],
    *,
    taken: str,
) -> None:
    """Add ``row`` (a version or cache with ``object_prefix``, ``size_bytes`` and
    ``file_count``), claim it, and fill its prefix with ``write(prefix)``.

    ``taken`` is the message when another request claimed the same name or number first.
    """
    session.add(row)
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(taken) from None
    written = fill_claimed_prefix(
        session, store, row.object_prefix, lambda: write(row.object_prefix)
    )
    row.size_bytes, row.file_count = written.size_bytes, written.file_count
    session.flush()


def upload_files(store: ObjectStore, files: Mapping[str, Path], prefix: str) -> None:
    """Upload ``files`` (relative path → local file) under ``prefix``."""
    for relative, source in sorted(files.items()):
        store.put_file(f"{prefix}/{relative}", source)
