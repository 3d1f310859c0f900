"""Writing the objects of a new version (a dataset import, a model import, a data cache) so
that they exist exactly when the version's row does, with their manifest recorded.

The caller first adds and flushes the row: that claims its unique name or number, so no other
request can be writing under the same prefix. The objects are then written straight under the
row's prefix, and removed again if the catalog transaction rolls back for any reason.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping
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
# Linux's NAME_MAX: no file system of a node (nor a local folder store) holds a longer name.
MAX_PART_BYTES = 255
UPLOAD_CONCURRENCY = 8


def check_paths(paths: Iterable[str], *, field: str = "files") -> None:
    """The rules a file's path inside a version obeys wherever it is stored: at least one
    file; each path relative, inside the version, valid UTF-8 without control characters, and
    no folder or file name in it over 255 bytes (it becomes a file name on the nodes)."""
    paths = list(paths)
    if not paths:
        raise InvalidInput.one(field, "at least one file is needed")
    if len(paths) > MAX_FILES:
        raise InvalidInput.one(field, f"at most {MAX_FILES} files, got {len(paths)}")
    problems = [
        FieldProblem(f"{field}.{path}", rule)
        for path in paths
        if (rule := _broken_path_rule(path)) is not None
    ]
    problems += _files_that_are_folders(paths, field)
    if problems:
        raise InvalidInput(problems)


def check_files(
    files: Mapping[str, Path], *, prefix: str, max_key_bytes: int, field: str = "files"
) -> None:
    """``check_paths``, and each object key (``prefix/path``) within the store's limit, so
    that nothing is refused by the store halfway through an import."""
    check_paths(files, field=field)
    room = max_key_bytes - len(prefix.encode()) - 1
    problems = [
        FieldProblem(
            f"{field}.{path}",
            f"its object key '{prefix}/{path}' would be {size} bytes (UTF-8); the object store "
            f"holds keys of at most {max_key_bytes} bytes, so a path here may be at most "
            f"{room} bytes",
        )
        for path in files
        if (size := len(f"{prefix}/{path}".encode())) > max_key_bytes
    ]
    if problems:
        raise InvalidInput(problems)


def _files_that_are_folders(paths: list[str], field: str) -> list[FieldProblem]:
    """A file's path may not also be a folder of another file (``model`` and ``model/a``):
    no file system holds both, and the nodes receive the files as files."""
    folders: dict[str, str] = {}
    for path in paths:
        parts = path.split("/")
        for end in range(1, len(parts)):
            folders.setdefault("/".join(parts[:end]), path)
    return [
        FieldProblem(f"{field}.{path}", f"is a file and also the folder of '{folders[path]}'")
        for path in paths
        if path in folders
    ]


def _broken_path_rule(path: str) -> str | None:
    parts = path.split("/")
    if (
        not path
        or "\\" in path
        or PurePosixPath(path).is_absolute()
        or any(part in ("", ".", "..") for part in parts)
    ):
        return "must be a relative path ('/' between names) without '..', '.', empty parts or '\\'"
    if any(unicodedata.category(character) == "Cc" for character in path):
        return "must not contain control characters"
    try:
        longest = max(len(part.encode()) for part in parts)
    except UnicodeEncodeError:
        return "must be valid UTF-8"
    if longest > MAX_PART_BYTES:
        return (
            f"each folder or file name in a path may be at most {MAX_PART_BYTES} bytes (UTF-8); "
            f"this path has one of {longest} bytes"
        )
    return None


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
