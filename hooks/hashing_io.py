"""Copying bytes while computing their SHA-256 in the same pass, so that recording and
verifying checksums never costs a second read of the data."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import BinaryIO

from octotrain.storage import Progress

BUFFER_BYTES = 8 * 1024 * 1024


def copy_hashing(source: Path, destination: Path, progress: Progress | None = None) -> str:
    """Copy ``source`` to ``destination`` (created or truncated); return the SHA-256."""
    digest = hashlib.sha256()
    buffer = bytearray(BUFFER_BYTES)
    view = memoryview(buffer)
    reader = os.open(source, os.O_RDONLY)
    try:
        writer = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            while count := os.readv(reader, [buffer]):
                digest.update(view[:count])
                written = 0
                while written < count:
                    written += os.write(writer, view[written:count])
                if progress is not None:
                    progress(count)
        finally:
            os.close(writer)
    finally:
        os.close(reader)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(BUFFER_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


class HashingReader:
    """A file read front to back, hashing what is read. It says it cannot seek, so that a
    transfer manager reads it in order (and uploads the parts it reads in parallel)."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


class HashingWriter:
    """A file written front to back, hashing what is written. It says it cannot seek, so that
    a transfer manager downloads ranges in parallel but writes them in order."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.handle.write(data)

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False
