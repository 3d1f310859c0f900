"""S3 bodies moved into a pipe, or a download's ranges into their file, by the kernel
(``splice``) on the real S3 server, resumed where a cut left them, stopped by a reader gone;
copied where no plain socket is under them, or the file system cannot splice."""

from __future__ import annotations

import errno
import io
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from botocore.response import StreamingBody
from urllib3.exceptions import ProtocolError

from hooks.storage import socket_splice
from hooks.storage.s3_store import S3Store, s3_store_from_url
from hooks.storage.socket_splice import send_body, write_body
from octotrain.storage import ObjectStoreUnavailable
from tests.pipe_reader import PipeReader

MIB = 1024 * 1024


@pytest.fixture
def store(s3_bucket: str) -> S3Store:
    found = s3_store_from_url(s3_bucket, attempts=3, first_wait_seconds=0.01)
    return S3Store(client=found.client, bucket=found.bucket, prefix="octotrain",
                   attempts=3, first_wait_seconds=0.01)  # fmt: skip


@pytest.fixture
def data(store: S3Store, tmp_path: Path) -> bytes:
    content = os.urandom(5 * MIB + 123)
    (tmp_path / "train.log").write_bytes(content)
    store.put_file("logs/train.log", tmp_path / "train.log")
    return content


@pytest.fixture
def spliced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes each ``splice`` call from a socket moved."""
    moved: list[int] = []
    real = os.splice

    def counting(source: int, destination: int, count: int) -> int:
        moved.append(real(source, destination, count))
        return moved[-1]

    monkeypatch.setattr(socket_splice.os, "splice", counting)
    return moved


@pytest.fixture
def spliced_to_file(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes each ``splice`` call into a file moved (those from a socket go on as they
    would)."""
    moved: list[int] = []
    real = os.splice

    def counting(source: int, destination: int, count: int, **at: int) -> int:
        done = real(source, destination, count, **at)
        if at:
            moved.append(done)
        return done

    monkeypatch.setattr(socket_splice.os, "splice", counting)
    return moved


def small_ranges(store: S3Store) -> S3Store:
    """The same bucket, downloaded in ranges of 2 MiB (the server refuses such upload parts)."""
    return S3Store(client=store.client, bucket=store.bucket, prefix="octotrain",
                   attempts=3, first_wait_seconds=0.01, multipart_chunk_mib=2)  # fmt: skip


def test_the_real_server_s_body_reaches_the_pipe_through_the_kernel(
    store: S3Store, data: bytes, spliced: list[int]
) -> None:
    starts = (0, 3 * MIB + 7, len(data))
    for start in starts:
        reader = PipeReader()
        assert store.send_to("logs/train.log", reader.writing, start=start) == len(data) - start
        assert reader.finish() == data[start:]
    # All but what urllib3 read with the headers (one read of at most a MiB each time) went
    # from socket to pipe inside the kernel.
    assert sum(spliced) >= sum(len(data) - start - MIB for start in starts[:2])


def test_a_cut_resumes_where_it_stopped_without_gap_or_repeat(
    store: S3Store, data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, calls = os.splice, []

    def cut_once(source: int, destination: int, count: int) -> int:
        calls.append(count)
        if len(calls) == 3:
            raise ConnectionResetError("reset by peer")
        return real(source, destination, count)

    monkeypatch.setattr(socket_splice.os, "splice", cut_once)
    reader = PipeReader()
    assert store.send_to("logs/train.log", reader.writing, start=10) == len(data) - 10
    assert reader.finish() == data[10:]


def test_a_cut_every_time_is_named_after_the_retries(
    store: S3Store, data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def reset(source: int, destination: int, count: int) -> int:
        raise ConnectionResetError("reset by peer")

    monkeypatch.setattr(socket_splice.os, "splice", reset)
    reader = PipeReader()
    with pytest.raises(ObjectStoreUnavailable, match=r"train\.log .*cut off 3 times"):
        store.send_to("logs/train.log", reader.writing)
    reader.finish()


def test_a_reader_gone_stops_the_transfer_at_once(store: S3Store, data: bytes) -> None:
    asked: list[str] = []
    store.client.meta.events.register(
        "before-send.s3.GetObject", lambda request, **_: asked.append(request.url)
    )
    reader = PipeReader(hang_up=True)
    with pytest.raises(BrokenPipeError):
        store.send_to("logs/train.log", reader.writing)
    os.close(reader.writing)
    assert len(asked) == 1  # no retry: the reader has what it wanted


def test_a_body_without_a_plain_socket_under_it_is_copied(spliced: list[int]) -> None:
    content = b"line\n" * 100_000
    reader = PipeReader()
    body = StreamingBody(io.BytesIO(content), len(content))
    assert sum(send_body(body, reader.writing)) == len(content)
    assert reader.finish() == content
    assert spliced == []


@pytest.fixture
def connection() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    yield ours, theirs
    ours.close()
    theirs.close()


def test_a_connection_closed_short_is_a_cut(
    connection: tuple[socket.socket, socket.socket],
) -> None:
    ours, theirs = connection
    theirs.sendall(b"x" * 1000)
    theirs.close()
    reader = PipeReader()
    with pytest.raises(ConnectionError, match="closed the connection 500 bytes short"):
        list(socket_splice._splice(ours, reader.writing, 1500))
    assert reader.finish() == b"x" * 1000


def test_a_silent_connection_times_out_as_a_cut(
    connection: tuple[socket.socket, socket.socket],
) -> None:
    ours, _ = connection
    ours.settimeout(0.05)
    reader = PipeReader()
    with pytest.raises(ConnectionError, match=r"sent nothing for 0\.05 s"):
        list(socket_splice._splice(ours, reader.writing, 10))
    assert reader.finish() == b""


class _FailingAnswer:
    """urllib3's answer, as ``with body as response`` gives it, failing its first read."""

    chunked, length_remaining, headers = False, 10, {}

    def __init__(self, sock: socket.socket) -> None:
        self.connection = SimpleNamespace(sock=sock)

    def read1(self, amount: int, *, decode_content: bool) -> bytes:
        raise ProtocolError("Connection broken: IncompleteRead")

    def __enter__(self) -> _FailingAnswer:
        return self

    def __exit__(self, *_: object) -> None:
        return None


def test_a_failed_read_of_the_buffered_start_is_a_cut(
    connection: tuple[socket.socket, socket.socket],
) -> None:
    reader = PipeReader()
    with pytest.raises(ConnectionError, match=r"reading the store's answer failed: .*broken"):
        list(send_body(_FailingAnswer(connection[0]), reader.writing))
    assert reader.finish() == b""


def test_a_download_s_ranges_reach_their_file_through_the_kernel(
    store: S3Store, data: bytes, tmp_path: Path, spliced_to_file: list[int]
) -> None:
    progress: list[int] = []
    got = small_ranges(store).get_file(
        "logs/train.log", tmp_path / "copy.log", progress=progress.append
    )
    assert (tmp_path / "copy.log").read_bytes() == data
    assert got.size == sum(progress) == len(data)
    # Three ranges: all but what urllib3 read with each one's headers (one read of at most a
    # MiB) went from socket to file inside the kernel.
    assert sum(spliced_to_file) >= len(data) - 3 * MIB


def test_a_cut_range_resumes_and_the_download_is_whole(
    store: S3Store, data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, from_sockets = os.splice, []

    def cut_once(source: int, destination: int, count: int, **at: int) -> int:
        if not at:
            from_sockets.append(count)
            if len(from_sockets) == 1:
                raise ConnectionResetError("reset by peer")
        return real(source, destination, count, **at)

    monkeypatch.setattr(socket_splice.os, "splice", cut_once)
    progress: list[int] = []
    small_ranges(store).get_file("logs/train.log", tmp_path / "copy.log", progress=progress.append)
    assert (tmp_path / "copy.log").read_bytes() == data
    assert len(from_sockets) > 1  # cut, then resumed
    assert sum(progress) == len(data)  # what the cut range wrote is not counted twice


def test_a_file_system_that_cannot_splice_gets_a_copy(
    store: S3Store, data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.splice

    def no_splice_to_files(source: int, destination: int, count: int, **at: int) -> int:
        if at:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(source, destination, count)

    monkeypatch.setattr(socket_splice.os, "splice", no_splice_to_files)
    small_ranges(store).get_file("logs/train.log", tmp_path / "copy.log")
    assert (tmp_path / "copy.log").read_bytes() == data


def test_a_body_without_a_plain_socket_is_written_in_place(
    tmp_path: Path, spliced: list[int]
) -> None:
    content = b"x" * (3 * MIB)
    path = tmp_path / "file"
    path.write_bytes(b"-" * 10)
    descriptor = os.open(path, os.O_WRONLY)
    try:
        body = StreamingBody(io.BytesIO(content), len(content))
        assert sum(write_body(body, descriptor, 5)) == len(content)
    finally:
        os.close(descriptor)
    assert path.read_bytes() == b"-" * 5 + content
    assert spliced == []
