"""An algorithm's code as the files of one folder, read from a folder on disk (the CLI's
``--code DIR``) or unpacked from a zip (the browser's and the API's upload).

Either way the result is ``{relative path: local file}``, checked before anything reaches the
object store: no path may leave the folder (``..``, absolute paths), a symbolic link may not
point out of it, a zip's members are files only (no links), and the whole is bounded in bytes
(``max_code_mb``). A zip whose members all sit in one top folder (``my-algo/train.py``, what
zipping a folder makes) gives that folder's content, so that ``train.py`` is at the top of
``CODE`` either way. Version control and byte-code caches are never part of the code.
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from octotrain.errors import FieldProblem, InvalidInput

# Folders of a working copy that are never code: version control and Python's byte-code.
SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", "__pycache__"})
# What zip tools add beside the files (macOS Finder's resource forks).
SKIPPED_ZIP_FOLDERS = frozenset({"__MACOSX"})
CHUNK = 1024 * 1024


def folder_files(root: Path, *, max_bytes: int, field: str = "code") -> dict[str, Path]:
    """The files under ``root`` by their path inside it. A symbolic link to a file inside
    the folder uploads that file's content; a link that leads out of the folder, or to a
    folder, is refused by its path."""
    if not root.is_dir():
        raise InvalidInput.one(field, f"'{root}' is not a folder")
    top = root.resolve()
    files: dict[str, Path] = {}
    problems: list[FieldProblem] = []
    for folder, folders, names in os.walk(top):
        here = Path(folder)
        # os.walk does not descend into a link to a folder; it is judged below with the files
        folders[:] = sorted(name for name in folders if name not in SKIPPED_FOLDERS)
        for name in [*folders, *names]:
            path = here / name
            relative = path.relative_to(top).as_posix()
            if not path.is_symlink():
                if name in names and path.is_file():
                    files[relative] = path
                continue
            target = path.resolve()
            if not target.is_relative_to(top):
                problems.append(
                    FieldProblem(f"{field}.{relative}", "is a symbolic link out of the folder")
                )
            elif target.is_dir():
                problems.append(
                    FieldProblem(f"{field}.{relative}", "is a symbolic link to a folder")
                )
            elif target.is_file():
                files[relative] = target
    if problems:
        raise InvalidInput(problems)
    check_total(files, max_bytes=max_bytes, field=field)
    return files


def unpacked_zip(
    archive: Path, into: Path, *, max_bytes: int, field: str = "code"
) -> dict[str, Path]:
    """The files of the zip ``archive``, written under ``into`` (a private, empty folder).
    Refused before anything is written: a member that is a link, a path that leaves the
    folder, a total over ``max_bytes``; the bytes actually unpacked are counted too, so an
    archive that understates its sizes stops at the bound."""
    try:
        with zipfile.ZipFile(archive) as opened:
            members = [
                info
                for info in opened.infolist()
                if not info.is_dir() and info.filename.split("/")[0] not in SKIPPED_ZIP_FOLDERS
            ]
            _check_members(members, max_bytes, field)
            top = _common_top(member.filename for member in members)
            files: dict[str, Path] = {}
            written = 0
            for number, member in enumerate(members):
                target = into / str(number)
                with opened.open(member) as source, target.open("wb") as sink:
                    while chunk := source.read(CHUNK):
                        written += len(chunk)
                        _within(written, max_bytes, field)
                        sink.write(chunk)
                files[member.filename.removeprefix(top)] = target
    except zipfile.BadZipFile as error:
        raise InvalidInput.one(field, f"is not a readable zip file ({error})") from None
    return files


def _check_members(members: list[zipfile.ZipInfo], max_bytes: int, field: str) -> None:
    problems = [
        FieldProblem(f"{field}.{member.filename}", rule)
        for member in members
        if (rule := _member_rule(member)) is not None
    ]
    if problems:
        raise InvalidInput(problems)
    _within(sum(member.file_size for member in members), max_bytes, field)


def _member_rule(member: zipfile.ZipInfo) -> str | None:
    if stat.S_ISLNK(member.external_attr >> 16):
        return "is a symbolic link; a code zip holds files only"
    name = member.filename.replace("\\", "/")
    if name.startswith("/") or ".." in name.split("/"):
        return "leaves the folder (an absolute path or '..'); a code zip holds files only"
    return None


def _common_top(names: Iterable[str]) -> str:
    """``"top/"`` when every path is inside the one folder ``top``; ``""`` otherwise."""
    tops = set()
    for name in names:
        head, slash, _ = name.partition("/")
        if not slash:
            return ""
        tops.add(head)
    return f"{tops.pop()}/" if len(tops) == 1 else ""


def check_total(files: Mapping[str, Path], *, max_bytes: int, field: str = "code") -> None:
    """Files uploaded one by one: at most ``max_bytes`` in all, as a folder or a zip."""
    _within(sum(path.stat().st_size for path in files.values()), max_bytes, field)


def _within(size: int, max_bytes: int, field: str) -> None:
    if size > max_bytes:
        raise InvalidInput.one(
            field,
            f"must be at most {max_bytes // (1024 * 1024)} MiB in all (max_code_mb), "
            f"got {size / (1024 * 1024):.1f} MiB or more",
        )
