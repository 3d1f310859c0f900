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

from octotrain.catalog.uploads import check_paths
from octotrain.errors import InvalidInput

CHUNK = 1024 * 1024


@contextmanager
def saved_uploads(files: list[UploadFile]) -> Iterator[dict[str, Path]]:
    """The uploads as {relative path: local file}. Paths are checked before anything is
    written (the services check them again with the store's key limit), and each file is
    saved under its number rather than its path: a path the rules accept may still be too
    long for the temporary folder's own file system path."""
    names = [upload.filename or "" for upload in files]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InvalidInput.one("files", f"each path may be given once; repeated: {repeated}")
    check_paths(names)
    with tempfile.TemporaryDirectory(prefix="octotrain-upload-") as scratch:
        saved = {}
        for number, (name, upload) in enumerate(zip(names, files, strict=True)):
            target = Path(scratch, str(number))
            with target.open("wb") as handle:
                shutil.copyfileobj(upload.file, handle, CHUNK)
            saved[name] = target
        yield saved
