"""Checksums of stored files (BLAKE3, 256 bits, hex), computed from the file in place
(memory-mapped) on a core the transfer leaves free, or just after it while the bytes are still
in the page cache, so that recording and verifying them never costs a second read from disk.

BLAKE3 hashes at several GB/s on one core (and in parallel over a large file), so that
verifying a download costs less than the download itself.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from blake3 import blake3

from octotrain.storage import Progress

BUFFER_BYTES = 8 * 1024 * 1024
# Large copies: what the kernel copies between two progress reports.
COPY_CHUNK_BYTES = 64 * 1024 * 1024
# Files at least this large are hashed with several threads.
PARALLEL_HASH_BYTES = 64 * 1024 * 1024


def file_checksum(path: Path | str) -> str:
    """The checksum of a file, read in place (memory-mapped, no copy)."""
    size = os.stat(path).st_size
    digest = blake3(max_threads=blake3.AUTO if size >= PARALLEL_HASH_BYTES else 1)
    if size:
        digest.update_mmap(path)
    return digest.hexdigest()


def copy_hashing(
    source: Path | str, destination: Path | str, progress: Progress | None = None
) -> tuple[str, int, float]:
    """Copy ``source`` to ``destination`` (created or truncated); return the checksum of what
    was copied, its size and the source's modification time.

    A small file is read once, hashed in memory and written. A large one is copied by the
    kernel (``copy_file_range``, no bytes through Python) in a second thread while this one
    hashes the source in place, so that a verified copy takes about as long as a plain one.
    """
    reader = os.open(source, os.O_RDONLY)
    try:
        writer = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            stat = os.fstat(reader)
            if stat.st_size <= BUFFER_BYTES:
                data = _read_all(reader, stat.st_size)
                _write_all(writer, data)
                if progress is not None:
                    progress(len(data))
                return str(blake3(data).hexdigest()), len(data), stat.st_mtime
            checksum = _copy_while_hashing(source, reader, writer, stat.st_size, progress)
            return checksum, stat.st_size, stat.st_mtime
        finally:
            os.close(writer)
    finally:
        os.close(reader)


def _read_all(reader: int, size: int) -> bytes:
    """The whole file, read in one call of its ``size`` (one byte more, to find its end):
    ``os.read`` allocates what it is asked for, and asking a small file for ``BUFFER_BYTES``
    costs more than copying it (copying files of 107 KiB took three times as long).
    A file that grew since its size was read is read on to its end."""
    chunks, done = [], 0
    while chunk := os.read(reader, size - done + 1 if done <= size else BUFFER_BYTES):
        chunks.append(chunk)
        done += len(chunk)
    return b"".join(chunks)


def _write_all(writer: int, data: bytes) -> None:
    view, written = memoryview(data), 0
    while written < len(view):
        written += os.write(writer, view[written:])


def _copy_while_hashing(
    source: Path | str, reader: int, writer: int, size: int, progress: Progress | None
) -> str:
    failure: list[BaseException] = []

    def copy() -> None:
        try:
            copied = 0
            while copied < size:
                count = _copy_range(reader, writer, min(COPY_CHUNK_BYTES, size - copied), copied)
                if count == 0:
                    raise OSError(f"{source} ended after {copied} of {size} bytes")
                copied += count
                if progress is not None:
                    progress(count)
        except BaseException as error:  # re-raised by the hashing thread
            failure.append(error)

    thread = threading.Thread(target=copy, name="octotrain-copy")
    thread.start()
    digest = blake3()
    digest.update_mmap(source)
    thread.join()
    if failure:
        raise failure[0]
    return str(digest.hexdigest())


def _copy_range(reader: int, writer: int, count: int, offset: int) -> int:
    """In the kernel where it can (same or any file system, Linux), else through a buffer."""
    try:
        return os.copy_file_range(reader, writer, count, offset, offset)
    except OSError:
        data = os.pread(reader, count, offset)
        return os.pwrite(writer, data, offset)
