"""Moving an S3 answer's body into a pipe without Python touching its bytes.

Searching a log in the store pipes the object to grep. Read through boto3, every byte is
received into Python, then written to the pipe: on two cores, shared with the S3 server and
grep, that copy is what made a search slower than boto3 merely reading the object. When the
answer comes over a plain TCP socket (an ``http://`` endpoint, as MinIO or Ceph inside a
cluster usually is), ``splice(2)`` moves it from the socket to the pipe inside the kernel
instead. Over TLS, with a chunked or encoded answer, or off Linux, the body is copied through
Python. Either way the caller sees the same bytes.

The socket is reached through botocore's and urllib3's public doors (``with body as
response``, ``response.connection.sock``); ``tests/hooks/test_socket_splice.py`` proves on a
real S3 server that the kernel path is taken, so an upgrade that closes a door fails there.
"""

from __future__ import annotations

import os
import select
import socket
import ssl
from collections.abc import Iterator
from typing import Any

from urllib3.exceptions import HTTPError

# What one splice moves at most: the pipe grep reads holds a megabyte (hooks/log_search.py).
SPLICE_BYTES = 1 << 20
# Chunks of the copying path, as ``iter_bytes`` streams them.
COPY_BYTES = 1 << 20


def send_body(body: Any, descriptor: int) -> Iterator[int]:
    """Write the rest of ``body`` (botocore's ``StreamingBody``) to the pipe ``descriptor``,
    yielding how many bytes each step moved. A body that ends short raises ``ConnectionError``
    (or botocore's ``IncompleteReadError``); the reader of the pipe gone, ``BrokenPipeError``.
    The connection is closed at the end, never handed back to the pool half read."""
    with body as response:
        source = _plain_socket(response)
        if source is None:
            for chunk in body.iter_chunks(COPY_BYTES):
                _write_all(descriptor, chunk)
                yield len(chunk)
            return
        # Reading the headers may have read the body's first bytes into urllib3's buffer.
        try:
            buffered = response.read1(SPLICE_BYTES, decode_content=False)
        except HTTPError as error:  # what botocore's own reads turn into its errors
            raise ConnectionError(f"reading the store's answer failed: {error}") from error
        if buffered:
            _write_all(descriptor, buffered)
            yield len(buffered)
        yield from _splice(source, descriptor, response.length_remaining or 0)


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


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]
