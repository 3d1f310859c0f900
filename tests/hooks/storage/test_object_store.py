"""The object-store contract, run against both backends: the local folder (embedded default)
and MinIO/S3 (an S3-compatible server on 127.0.0.1)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from blake3 import blake3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse

from hooks.storage.local_store import LocalFolderStore
from hooks.storage.object_store import object_store_from_url, upload_folder
from hooks.storage.s3_store import S3Store, s3_store_from_url
from octotrain.storage import (
    ChecksumMismatch,
    ObjectNotFound,
    ObjectStore,
    ObjectStoreError,
    ObjectStoreUnavailable,
)
from tests.file_names import name_of, path_of
from tests.pipe_reader import PipeReader

MIB = 1024 * 1024


@pytest.fixture(params=["local", "s3"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalFolderStore(tmp_path / "objects")
    url = request.getfixturevalue("s3_bucket")
    store = s3_store_from_url(url, attempts=2, first_wait_seconds=0.05)
    # Small parts, so that the multipart and ranged paths run on test-sized files.
    return S3Store(client=store.client, bucket=store.bucket, prefix="octotrain",
                   multipart_chunk_mib=5, attempts=2, first_wait_seconds=0.05)  # fmt: skip


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# A read-only destination may be the stored file itself (a local store's hard link): the same
# content, checksum and errors either way.
READ_ONLY = pytest.mark.parametrize("read_only", [False, True], ids=["copy", "read-only"])


@READ_ONLY
def test_put_and_get_record_and_verify_the_checksum(
    any_store: ObjectStore, tmp_path: Path, read_only: bool
) -> None:
    data = os.urandom(12 * MIB + 123)  # above the multipart size: parts and ranged reads
    expected = blake3(data).hexdigest()
    put = any_store.put_file("datasets/p/d/v1/big.bin", write(tmp_path / "big.bin", data))
    assert (put.checksum, put.size) == (expected, len(data))
    got = any_store.get_file(
        "datasets/p/d/v1/big.bin", tmp_path / "out" / "big.bin", checksum=expected,
        read_only=read_only,
    )  # fmt: skip
    assert got.checksum == expected
    assert (tmp_path / "out" / "big.bin").read_bytes() == data
    # An empty object: no byte to read, no range to ask for.
    any_store.put_file("datasets/p/d/v1/empty.bin", write(tmp_path / "empty.bin", b""))
    empty = tmp_path / "out" / "empty.bin"
    got = any_store.get_file("datasets/p/d/v1/empty.bin", empty,
                             checksum=blake3(b"").hexdigest(), read_only=read_only)  # fmt: skip
    assert (got.size, empty.read_bytes()) == (0, b"")


@READ_ONLY
def test_a_corrupt_copy_is_removed_and_named(
    any_store: ObjectStore, tmp_path: Path, read_only: bool
) -> None:
    any_store.put_file("m/x.bin", write(tmp_path / "x.bin", b"actual content"))
    target = tmp_path / "out" / "x.bin"
    with pytest.raises(ChecksumMismatch, match=r"m/x\.bin: its content has checksum"):
        any_store.get_file(
            "m/x.bin", target, checksum=blake3(b"recorded").hexdigest(), read_only=read_only
        )
    assert not target.parent.exists()  # no partial file left, nor the folder made for it


def test_listing_deleting_and_copying_prefixes(any_store: ObjectStore, tmp_path: Path) -> None:
    folder = tmp_path / "tree"
    write(folder / "a.txt", b"alpha")
    write(folder / "sub" / "b.bin", b"\x00\x01" * 1000)
    uploaded = upload_folder(any_store, folder, "datasets/p/d/v1")
    assert [info.key for info in uploaded] == ["datasets/p/d/v1/a.txt", "datasets/p/d/v1/sub/b.bin"]
    assert [(i.key, i.size) for i in any_store.list("datasets/p/d/v1")] == [
        ("datasets/p/d/v1/a.txt", 5),
        ("datasets/p/d/v1/sub/b.bin", 2000),
    ]
    assert any_store.list("datasets/p/d/v") == []  # a prefix is a folder, not a string start
    assert any_store.delete_prefix("datasets/p/d/v1/a.txt") == 0  # a file is not a folder
    assert any_store.copy_prefix("datasets/p/d/v1", "caches/p/c/1") == 2
    any_store.get_file("caches/p/c/1/sub/b.bin", tmp_path / "copy.bin")
    assert (tmp_path / "copy.bin").read_bytes() == b"\x00\x01" * 1000
    assert any_store.delete_prefix("datasets/p/d/v1") == 2
    assert any_store.list("datasets/p/d/v1") == []
    assert len(any_store.list("caches/p/c/1")) == 2  # copies are independent


def test_a_missing_object_is_named(any_store: ObjectStore, tmp_path: Path) -> None:
    with pytest.raises(ObjectNotFound, match=r"object nope/x\.bin does not exist"):
        any_store.get_file("nope/x.bin", tmp_path / "x.bin")
    assert not (tmp_path / "x.bin").exists()


@READ_ONLY
def test_a_destination_may_be_a_string_in_a_folder_not_made_yet(
    any_store: ObjectStore, tmp_path: Path, read_only: bool
) -> None:
    data = b"staged by name"
    any_store.put_file("datasets/p/d/v1/a.txt", write(tmp_path / "a.txt", data))
    target = f"{tmp_path}/node/dataset/a.txt"
    got = any_store.get_file(
        "datasets/p/d/v1/a.txt", target, checksum=blake3(data).hexdigest(), read_only=read_only
    )
    assert (got.size, Path(target).read_bytes()) == (len(data), data)
    with pytest.raises(ObjectNotFound, match=r"object datasets/p/d/v1/b\.txt does not exist"):
        any_store.get_file(
            "datasets/p/d/v1/b.txt", f"{tmp_path}/elsewhere/b.txt", read_only=read_only
        )
    assert not Path(f"{tmp_path}/elsewhere").exists()  # nor the folder made for it


@pytest.mark.parametrize("key", ["../escape", "/abs", "a//b", "a/./b", ""])
def test_keys_cannot_escape_the_store(any_store: ObjectStore, tmp_path: Path, key: str) -> None:
    with pytest.raises(ObjectStoreError, match="invalid object key"):
        any_store.put_file(key, write(tmp_path / "f", b"x"))


def test_a_local_read_only_get_links_the_object_and_a_writable_one_is_copied(
    tmp_path: Path,
) -> None:
    store = LocalFolderStore(tmp_path / "objects")
    store.put_file("d/a.txt", write(tmp_path / "a.txt", b"alpha"))
    linked = store.get_file("d/a.txt", tmp_path / "linked", read_only=True)
    copied = store.get_file("d/a.txt", tmp_path / "copied")
    stored = store.root / "d" / "a.txt"
    assert (tmp_path / "linked").stat().st_ino == stored.stat().st_ino
    assert (tmp_path / "copied").stat().st_ino != stored.stat().st_ino
    assert linked == copied
    # A file put in the folder by hand, writable, is not known to stay as it is: copied.
    write(store.root / "d" / "by-hand.txt", b"beta")
    store.get_file("d/by-hand.txt", tmp_path / "by-hand", read_only=True)
    assert (tmp_path / "by-hand").stat().st_ino != (store.root / "d/by-hand.txt").stat().st_ino


def test_local_objects_are_read_only_and_readable_in_place(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path / "objects")
    store.put_file("datasets/p/d/v1/a.txt", write(tmp_path / "a.txt", b"alpha"))
    path = store.local_path("datasets/p/d/v1")
    assert path is not None and (path / "a.txt").read_bytes() == b"alpha"
    assert (path / "a.txt").stat().st_mode & 0o222 == 0


def test_an_unreachable_store_is_retried_with_backoff_then_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_DOWN",
        '{"conn_type": "aws", "login": "access", "password": "secret", '
        '"extra": {"endpoint_url": "http://127.0.0.1:9"}}',
    )
    store = s3_store_from_url("s3://bucket?conn_id=down", attempts=3, first_wait_seconds=0.05)
    with pytest.raises(
        ObjectStoreUnavailable,
        match=r"cannot write x at s3://bucket/ after 3 attempts: Could not connect",
    ):
        store.put_file("x", write(tmp_path / "x", b"x"))
    with pytest.raises(
        ObjectStoreUnavailable, match=r"cannot list p at s3://bucket/ after 3 attempts"
    ):
        store.list("p")


def test_the_url_names_the_backend(tmp_path: Path, s3_bucket: str) -> None:
    assert isinstance(object_store_from_url(f"file://{tmp_path}"), LocalFolderStore)
    assert isinstance(object_store_from_url(s3_bucket), S3Store)
    with pytest.raises(ObjectStoreError, match="use file://<folder> or s3://<bucket>"):
        object_store_from_url("ftp://x")


def test_ranges_and_streams_read_only_what_they_are_asked(
    any_store: ObjectStore, tmp_path: Path
) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB
    any_store.put_file("logs/big.log", write(tmp_path / "big.log", data))
    assert any_store.stat("logs/big.log").size == len(data)
    assert any_store.read_range("logs/big.log", 1000, 1010) == data[1000:1010]
    assert any_store.read_range("logs/big.log", len(data) - 5, len(data) + 100) == data[-5:]
    assert any_store.read_range("logs/big.log", len(data), len(data) + 10) == b""
    assert b"".join(any_store.iter_bytes("logs/big.log", chunk_size=100_000)) == data
    assert b"".join(any_store.iter_bytes("logs/big.log", start=len(data) - 3)) == data[-3:]
    assert b"".join(any_store.iter_bytes("logs/big.log", start=len(data))) == b""
    for start in (0, 1000, len(data)):
        reader = PipeReader()
        assert any_store.send_to("logs/big.log", reader.writing, start=start) == len(data) - start
        assert reader.finish() == data[start:]
    any_store.put_file("logs/empty.log", write(tmp_path / "empty.log", b""))
    assert b"".join(any_store.iter_bytes("logs/empty.log")) == b""
    with pytest.raises(ObjectNotFound, match=r"logs/none\.log"):
        any_store.stat("logs/none.log")
    with pytest.raises(ObjectNotFound, match=r"logs/none\.log"):
        any_store.read_range("logs/none.log", 0, 10)
    with pytest.raises(ObjectNotFound, match=r"logs/none\.log"):
        list(any_store.iter_bytes("logs/none.log"))
    reader = PipeReader()
    with pytest.raises(ObjectNotFound, match=r"logs/none\.log"):
        any_store.send_to("logs/none.log", reader.writing)
    assert reader.finish() == b""


def test_keys_up_to_the_announced_limit_round_trip(any_store: ObjectStore, tmp_path: Path) -> None:
    """Every key the catalog accepts (parts of at most 255 bytes, a whole key of at most the
    store's ``max_key_bytes``) is written, listed and read back, also into a folder whose
    file name is itself 255 bytes: no temporary name beside it may be longer."""
    key = path_of(any_store.max_key_bytes)
    assert len(key.encode()) == any_store.max_key_bytes
    assert max(len(part.encode()) for part in key.split("/")) == 255
    reported = f"datasets/p/d/v1/{name_of(224)}"  # the size an acceptance test found broken
    for written in (key, reported):
        any_store.put_file(written, write(tmp_path / "source", written.encode()))
        assert [info.key for info in any_store.list(written.rsplit("/", 1)[0])] == [written]
        copy = tmp_path / "copies" / name_of(255)
        any_store.get_file(written, copy)
        assert copy.read_bytes() == written.encode()
        assert [path.name for path in copy.parent.iterdir()] == [copy.name]
        any_store.delete_prefix(written.split("/", 1)[0])


def test_a_download_cut_off_midway_leaves_no_file(s3_bucket: str, tmp_path: Path) -> None:
    """The ranges are written in place by the download threads: when a range is
    refused (the credentials revoked midway), the download fails, named, and nothing it wrote
    stays in the folder."""
    store = s3_store_from_url(s3_bucket, attempts=2, first_wait_seconds=0.05)
    store = S3Store(client=store.client, bucket=store.bucket, prefix="octotrain",
                    multipart_chunk_mib=5, attempts=2, first_wait_seconds=0.05)  # fmt: skip
    store.put_file("m/big.bin", write(tmp_path / "big.bin", os.urandom(12 * MIB)))
    ranges: list[bytes] = []

    def refuse_after_the_first_part(request: AWSPreparedRequest, **_: object) -> Any:
        ranges.append(request.headers.get("Range", b""))
        if len(ranges) == 1:
            return None  # sent to the server
        return AWSResponse(request.url, 403, {}, _Refusal())

    store.client.meta.events.register("before-send.s3.GetObject", refuse_after_the_first_part)
    target = tmp_path / "out" / "big.bin"
    with pytest.raises(ObjectStoreError, match=r"cannot read m/big\.bin .*AccessDenied"):
        store.get_file("m/big.bin", target)
    # A ranged download was cut (its threads send the ranges in any order).
    assert len(ranges) > 1 and all(part.startswith(b"bytes=") for part in ranges)
    assert not target.parent.exists()  # nothing it wrote, nor the folder it made


def test_an_object_replaced_during_its_download_is_refused(s3_bucket: str, tmp_path: Path) -> None:
    """The ranges of a download are all of the version the first one read (``If-Match``): a
    file stitched from two versions would fail only a checksum, where a caller gave one."""
    found = s3_store_from_url(s3_bucket, attempts=2, first_wait_seconds=0.05)
    store = S3Store(client=found.client, bucket=found.bucket, prefix="octotrain",
                    multipart_chunk_mib=5, attempts=2, first_wait_seconds=0.05)  # fmt: skip
    writer = s3_store_from_url(s3_bucket, attempts=2, first_wait_seconds=0.05)
    store.put_file("m/big.bin", write(tmp_path / "big.bin", os.urandom(12 * MIB)))
    replacement = write(tmp_path / "new.bin", os.urandom(12 * MIB))
    sent: list[str] = []

    def replace_after_the_first_range(**_: object) -> None:
        sent.append("GET")
        if len(sent) == 1:
            writer.client.upload_file(str(replacement), store.bucket, "octotrain/m/big.bin")

    store.client.meta.events.register("after-call.s3.GetObject", replace_after_the_first_range)
    target = tmp_path / "out" / "big.bin"
    with pytest.raises(ObjectStoreError, match=r"cannot read m/big\.bin .*PreconditionFailed"):
        store.get_file("m/big.bin", target)
    assert not target.parent.exists()
    assert store.get_file("m/big.bin", target).size == 12 * MIB  # the new version, whole


class _Refusal:
    """The body of an S3 error answer, as botocore reads one."""

    content = (
        b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code>"
        b"<Message>Access Denied</Message></Error>"
    )

    def stream(self) -> Iterator[bytes]:
        yield self.content
