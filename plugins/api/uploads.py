"""Files uploaded with a request (multipart ``files``; each part's file name is its path
inside the version, so folders keep their layout), saved to a private temporary folder for
the services to put into the object store."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi import UploadFile

from octotrain.catalog.uploads import check_files
from octotrain.errors import InvalidInput

CHUNK = 1024 * 1024


@contextmanager
def saved_uploads(files: list[UploadFile]) -> Iterator[dict[str, Path]]:
    """The uploads as {relative path: local file}; paths are checked before anything is
    written, so a name like ``../x`` never reaches the disk."""
    names = [upload.filename or "" for upload in files]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InvalidInput.one("files", f"each path may be given once; repeated: {repeated}")
    check_files(dict.fromkeys(names, Path()))
    with tempfile.TemporaryDirectory(prefix="octotrain-upload-") as scratch:
        saved = {}
        for name, upload in zip(names, files, strict=True):
            target = Path(scratch, *name.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as handle:
                shutil.copyfileobj(upload.file, handle, CHUNK)
            saved[name] = target
        yield saved
