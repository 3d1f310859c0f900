"""Moving an S3 answer's body into a pipe or a file without Python touching its bytes.

Searching a log in the store pipes the object to grep, and staging writes a dataset's ranges
into its files. Read through boto3, every byte is received into Python, then written out: on
two cores, shared with the S3 server (and grep), that copy is what made a search slower than
boto3 merely reading the object, and staging slower than boto3's transfer manager. When the
answer comes over a plain TCP socket (an ``http://`` endpoint, as MinIO or Ceph inside a
cluster usually is), ``splice(2)`` moves it from the socket to the pipe inside the kernel
instead, and on from a pipe of our own to the file. Over TLS, with a chunked or encoded
answer, or off Linux, the body is copied through Python. Either way the caller sees the same
bytes.

The socket is reached through botocore's and urllib3's public doors (``with body as
response``, ``response.connection.sock``); ``tests/hooks/storage/test_socket_splice.py`` proves on a
real S3 server that the kernel path is taken, so an upgrade that closes a door fails there.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import socket
import ssl
from collections.abc import Iterator
from typing import Any, Protocol

from urllib3.exceptions import HTTPError

# What one splice moves at most, and what the pipe between socket and file holds: the pipe
# grep reads holds as much (hooks/runs/log_search.py).
SPLICE_BYTES = 1 << 20
# Chunks of the copying path, as ``iter_bytes`` streams them.
COPY_BYTES = 1 << 20


class _Sink(Protocol):
    def write(self, data: bytes) -> None: ...

    def splice(self, source: socket.socket, count: int) -> Iterator[int]: ...


def send_body(body: Any, descriptor: int) -> Iterator[int]:
    """Write the rest of ``body`` (botocore's ``StreamingBody``) to the pipe ``descriptor``,
    yielding how many bytes each step moved. A body that ends short raises ``ConnectionError``
    (or botocore's ``IncompleteReadError``); the reader of the pipe gone, ``BrokenPipeError``.
    The connection is closed at the end, never handed back to the pool half read."""
    yield from _move(body, _PipeSink(descriptor))


def write_body(body: Any, descriptor: int, offset: int) -> Iterator[int]:
    """Write the rest of ``body`` into the file ``descriptor`` from byte ``offset`` on (in
    place: other threads write other ranges of the same file), yielding how many bytes each
    step wrote; it ends and fails as ``send_body`` does."""
    yield from _move(body, _FileSink(descriptor, offset))


def _move(body: Any, sink: _Sink) -> Iterator[int]:
    with body as response:
        source = _plain_socket(response)
        if source is None:
            for chunk in body.iter_chunks(COPY_BYTES):
                sink.write(chunk)
                yield len(chunk)
            return
        # Reading the headers may have read the body's first bytes into urllib3's buffer.
        try:
            buffered = response.read1(SPLICE_BYTES, decode_content=False)
        except HTTPError as error:  # what botocore's own reads turn into its errors
            raise ConnectionError(f"reading the store's answer failed: {error}") from error
        if buffered:
            sink.write(buffered)
            yield len(buffered)
        if response.length_remaining:
            yield from sink.splice(source, response.length_remaining)


class _PipeSink:
    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.descriptor, view) :]

    def splice(self, source: socket.socket, count: int) -> Iterator[int]:
        yield from _splice(source, self.descriptor, count)


class _FileSink:
    """A file written from ``offset`` on; spliced bytes pass through a pipe of its own (one
    end of a splice must be a pipe), and are copied where the file system cannot splice."""

    def __init__(self, descriptor: int, offset: int) -> None:
        self.descriptor, self.offset = descriptor, offset
        self.spliceable = True

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.pwrite(self.descriptor, view, self.offset)
            view, self.offset = view[written:], self.offset + written

    def splice(self, source: socket.socket, count: int) -> Iterator[int]:
        reading, writing = os.pipe()
        try:
            with contextlib.suppress(OSError):  # over the system's limit: a smaller pipe
                fcntl.fcntl(writing, fcntl.F_SETPIPE_SZ, SPLICE_BYTES)
            for moved in _splice(source, writing, count):
                self._drain(reading, moved)
                yield moved
        finally:
            os.close(reading)
            os.close(writing)

    def _drain(self, pipe: int, count: int) -> None:
        """Move the ``count`` bytes in ``pipe`` to the file."""
        while count and self.spliceable:
            try:
                moved = os.splice(pipe, self.descriptor, count, offset_dst=self.offset)
            except OSError as error:
                if error.errno != errno.EINVAL:
                    raise
                self.spliceable = False  # a file system without splice: copy
                break
            count, self.offset = count - moved, self.offset + moved
        while count:
            data = os.read(pipe, count)
            self.write(data)
            count -= len(data)


def _plain_socket(response: Any) -> socket.socket | None:
    """The TCP socket under ``response`` when its body arrives there as it is (a known length,
    neither chunked nor encoded, no TLS), else None."""
    if not hasattr(os, "splice") or getattr(response, "chunked", True):
        return None
    if response.length_remaining is None or response.headers.get("content-encoding"):
        return None
    connection = getattr(response, "connection", None)
    source = getattr(connection, "sock", None)
    if not isinstance(source, socket.socket) or isinstance(source, ssl.SSLSocket):
        return None
    return source


def _splice(source: socket.socket, descriptor: int, remaining: int) -> Iterator[int]:
    """Move ``remaining`` bytes from ``source`` to the pipe, waiting for data as long as the
    socket's own timeout (botocore's read timeout) allows."""
    timeout = source.gettimeout()
    waiting = select.poll()
    waiting.register(source, select.POLLIN)
    while remaining:
        try:
            moved = os.splice(source.fileno(), descriptor, min(remaining, SPLICE_BYTES))
        except BlockingIOError:  # a socket with a timeout is non-blocking underneath
            if not waiting.poll(None if timeout is None else timeout * 1000):
                raise ConnectionError(f"the store sent nothing for {timeout:g} s") from None
            continue
        if moved == 0:
            raise ConnectionError(f"the store closed the connection {remaining} bytes short")
        remaining -= moved
        yield moved
