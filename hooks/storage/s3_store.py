"""MinIO / S3 as the object store, configured by an Airflow connection.

``OCTOTRAIN_OBJECT_STORE_URL=s3://<bucket>[/<prefix>]?conn_id=<connection id>``: the connection
(type ``aws``), read by the Amazon provider's ``S3Hook``, gives the credentials as login and
password (or a role to assume, a profile ...) and, for MinIO, the endpoint as
``{"endpoint_url": "http://minio:9000"}`` in its extra. Uploads go through boto3's transfer
manager (multipart above ``multipart_chunk_mib``), with the checksum (BLAKE3) of a file
computed in place, by a second core, meanwhile. Downloads are ranges of that size read in
parallel and written in place, moved from socket to file by the kernel where the endpoint
allows it (hooks/storage/socket_splice.py), and hashed once written. Transient failures (the store
unreachable, 5xx, throttling) are retried with exponential backoff, and a body cut off midway
resumes where it stopped; then ``ObjectStoreUnavailable`` says so.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlparse

from boto3.s3.transfer import TransferConfig, create_transfer_manager
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from s3transfer.manager import TransferManager
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from hooks.storage.hashing_io import file_checksum
from hooks.storage.made_folders import missing_folders, remove_empty
from hooks.storage.socket_splice import send_body, write_body
from octotrain.storage import (
    ObjectInfo,
    ObjectNotFound,
    ObjectStoreError,
    ObjectStoreUnavailable,
    Progress,
    checked_digest,
    prefix_of,
    validate_key,
)

T = TypeVar("T")
MIB = 1024 * 1024
DEFAULT_CONNECTION = "minio_default"
# What MinIO and a connection without a region get (boto3 needs one to sign requests).
DEFAULT_REGION = "us-east-1"
TRANSIENT_CODES = {"SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "503"}
DELETE_BATCH = 1000
# S3 (and MinIO) refuse object keys longer than this, in UTF-8 bytes.
S3_MAX_KEY_BYTES = 1024


def _transient(error: BaseException) -> bool:
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
        return code in TRANSIENT_CODES or status >= 500
    return isinstance(error, BotoCoreError | ConnectionError | TimeoutError)


def _missing(error: BaseException) -> bool:
    if not isinstance(error, ClientError):
        return False
    return str(error.response.get("Error", {}).get("Code", "")) in ("404", "NoSuchKey", "NotFound")


class S3Store:
    def __init__(
        self,
        *,
        client: Any,
        bucket: str,
        prefix: str = "",
        attempts: int = 5,
        first_wait_seconds: float = 0.5,
        concurrency: int = 8,
        multipart_chunk_mib: int = 16,
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix_of(prefix) if prefix else ""
        self.url = f"s3://{bucket}/{self.prefix}"
        # The store's own prefix goes in front of every key.
        self.max_key_bytes = S3_MAX_KEY_BYTES - len(self.prefix.encode())
        self.attempts = attempts
        self.first_wait_seconds = first_wait_seconds
        self.concurrency = concurrency
        self.transfer = TransferConfig(
            multipart_threshold=multipart_chunk_mib * MIB,
            multipart_chunksize=multipart_chunk_mib * MIB,
            max_concurrency=concurrency,
            use_threads=True,
        )
        self.part_bytes = multipart_chunk_mib * MIB
        self._manager: TransferManager | None = None
        self._downloads: ThreadPoolExecutor | None = None
        self._manager_lock = threading.Lock()

    @property
    def manager(self) -> TransferManager:
        """One transfer manager for every upload of this store: its threads and connections
        are shared, so that many small objects cost no more than their requests."""
        with self._manager_lock:
            if self._manager is None:
                self._manager = create_transfer_manager(self.client, self.transfer)
            return self._manager

    @property
    def downloads(self) -> ThreadPoolExecutor:
        """The threads that read the ranges of every download of this store (the first range of
        each is read by the caller's thread, so that a small object costs one GET, no more)."""
        with self._manager_lock:
            if self._downloads is None:
                self._downloads = ThreadPoolExecutor(self.concurrency, "octotrain-s3-download")
            return self._downloads

    def _key(self, key: str) -> str:
        return self.prefix + validate_key(key)

    def _retrying(self, what: str, action: Callable[[], T], *, key: str = "") -> T:
        """Run ``action`` (one operation: ``what``), retrying transient failures."""
        retrying = Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.first_wait_seconds, max=30),
            retry=retry_if_exception(_transient),
            reraise=False,
        )
        try:
            return retrying(action)
        except RetryError as error:
            last = error.last_attempt.exception()
            raise ObjectStoreUnavailable(
                f"cannot {what} at {self.url} after {self.attempts} attempts: {last}"
            ) from None
        except ClientError as error:
            if _missing(error):
                raise ObjectNotFound(f"object {key} does not exist in {self.url}") from None
            raise ObjectStoreError(f"cannot {what} at {self.url}: {error}") from None

    def put_file(self, key: str, source: Path) -> ObjectInfo:
        """Upload ``source`` as the transfer manager's threads read its parts in parallel,
        while this thread hashes it in place. The file must not change meanwhile: callers that
        upload files still being written compare its stat around the upload (checkpoints)."""
        full = self._key(key)

        def upload() -> str:
            transfer = self.manager.upload(str(source), self.bucket, full)
            try:
                checksum = file_checksum(source)
            except BaseException:
                transfer.cancel()
                raise
            transfer.result()
            return checksum

        digest = self._retrying(f"write {key}", upload, key=key)
        stat = source.stat()
        return ObjectInfo(key=key, size=stat.st_size, modified=stat.st_mtime, checksum=digest)

    def get_file(
        self,
        key: str,
        destination: Path | str,
        *,
        checksum: str | None = None,
        progress: Progress | None = None,
        read_only: bool = False,  # a remote object is always downloaded
    ) -> ObjectInfo:
        validate_key(key)  # before any folder is made
        destination = Path(destination)
        made = missing_folders(destination.parent)
        destination.parent.mkdir(parents=True, exist_ok=True)
        # Not the destination's name plus a suffix: that name may already be 255 bytes long.
        partial = destination.with_name(f".octotrain-download-{uuid.uuid4().hex[:12]}.part")

        try:
            self._download(key, partial, progress)
            digest = file_checksum(partial)
            checked_digest(key, checksum, digest, partial)
        except BaseException:
            partial.unlink(missing_ok=True)
            remove_empty(made)  # a failed download leaves nothing, not even its folder
            raise
        size = partial.stat().st_size
        partial.replace(destination)
        return ObjectInfo(key=key, size=size, modified=0.0, checksum=digest)

    def _download(self, key: str, path: Path, progress: Progress | None) -> None:
        """Write ``key`` into the new file ``path``, range by range. The first range's answer
        tells the object's size and version (ETag): the other ranges, of that version only
        (``If-Match``), go to the download threads while this one writes the first."""
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            first = self._retrying(
                f"read {key}", lambda: self._get(key, 0, self.part_bytes), key=key
            )
            if first is None:  # an empty object has no first byte to read
                return
            size = _object_size(first)
            etag = str(first["ETag"])
            # A server that answers an empty object's range with all of it sends one, empty.
            spans = [
                (start, min(start + self.part_bytes, size))
                for start in range(0, size, self.part_bytes)
            ] or [(0, 0)]
            others = [
                self.downloads.submit(self._write_range, key, descriptor, span, etag, progress)
                for span in spans[1:]
            ]
            try:
                self._write_range(key, descriptor, spans[0], etag, progress, first=first)
            except BaseException:
                _finish(others, failed=True)
                raise
            _finish(others)
        finally:
            os.close(descriptor)

    def _write_range(
        self,
        key: str,
        descriptor: int,
        span: tuple[int, int],
        etag: str,
        progress: Progress | None,
        first: dict[str, Any] | None = None,
    ) -> None:
        start, end = span
        for moved in self._resumed(
            key, start, lambda body, at: write_body(body, descriptor, at), int,
            end=end, etag=etag, first=first,
        ):  # fmt: skip
            if progress is not None:
                progress(moved)

    def list(self, prefix: str) -> list[ObjectInfo]:
        base = self._key(prefix.rstrip("/")) + "/"

        def listing() -> list[ObjectInfo]:
            found = []
            paginator = self.client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=base):
                for item in page.get("Contents", []):
                    found.append(
                        ObjectInfo(
                            key=item["Key"][len(self.prefix) :],
                            size=int(item["Size"]),
                            modified=item["LastModified"].timestamp(),
                        )
                    )
            return sorted(found, key=lambda info: info.key)

        return self._retrying(f"list {prefix}", listing)

    def stat(self, key: str) -> ObjectInfo:
        head = self._retrying(
            f"read {key}",
            lambda: self.client.head_object(Bucket=self.bucket, Key=self._key(key)),
            key=key,
        )
        return ObjectInfo(
            key=key, size=int(head["ContentLength"]), modified=head["LastModified"].timestamp()
        )

    def _get(
        self, key: str, start: int, end: int | None = None, etag: str | None = None
    ) -> dict[str, Any] | None:
        """The answer for bytes ``start`` to ``end`` (excluded; the object's end if None) of
        ``key``, of version ``etag`` if given; None when nothing is there."""
        asked: dict[str, str] = {}
        if start or end is not None:
            asked["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
        if etag is not None:
            asked["IfMatch"] = etag
        try:
            return dict(self.client.get_object(Bucket=self.bucket, Key=self._key(key), **asked))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "InvalidRange":
                return None
            raise

    def read_range(self, key: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""

        def ranged() -> bytes:
            answer = self._get(key, start, end)
            # None: ``start`` is at or past the end, nothing there.
            return b"" if answer is None else bytes(answer["Body"].read())

        return self._retrying(f"read {key}", ranged, key=key)

    def iter_bytes(self, key: str, *, start: int = 0, chunk_size: int = 1 << 20) -> Iterator[bytes]:
        chunks = self._resumed(key, start, lambda body, _: body.iter_chunks(chunk_size), len)
        yield from chunks

    def send_to(self, key: str, descriptor: int, *, start: int = 0) -> int:
        moved = self._resumed(key, start, lambda body, _: send_body(body, descriptor), int)
        return sum(moved)

    def _resumed(
        self,
        key: str,
        start: int,
        transfer: Callable[[Any, int], Iterator[T]],
        size: Callable[[T], int],
        *,
        end: int | None = None,
        etag: str | None = None,
        first: dict[str, Any] | None = None,
    ) -> Iterator[T]:
        """What ``transfer`` yields from the body of one GET of ``key`` from ``start`` (to
        ``end``, of version ``etag``; ``first`` is that GET's answer if already read), given
        the body and where it starts (``size`` bytes of the object each step); a transfer cut
        off midway resumes where it stopped, as many times as an operation is retried. The
        reader of a pipe going away is no cut: it ends it."""
        position, resumed, answer = start, 0, first
        while True:
            if answer is None:
                answer = self._retrying(
                    f"read {key}", lambda at=position: self._get(key, at, end, etag), key=key
                )
                if answer is None:
                    return
            try:
                for step in transfer(answer["Body"], position):
                    position += size(step)
                    yield step
                return
            except BrokenPipeError:
                raise
            except (BotoCoreError, ConnectionError) as error:
                resumed += 1
                if resumed >= self.attempts:
                    raise ObjectStoreUnavailable(
                        f"cannot read {key} at {self.url}: cut off {resumed} times ({error})"
                    ) from None
                answer = None

    def delete_prefix(self, prefix: str) -> int:
        keys = [self._key(info.key) for info in self.list(prefix)]
        for start in range(0, len(keys), DELETE_BATCH):
            batch = [{"Key": key} for key in keys[start : start + DELETE_BATCH]]
            self._retrying(
                f"delete {prefix}",
                lambda batch=batch: self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True}
                ),
            )
        return len(keys)

    def copy_prefix(self, source: str, destination: str) -> int:
        objects = self.list(source)
        source_prefix, target_prefix = prefix_of(source), prefix_of(destination)

        def copy(info: ObjectInfo) -> None:
            target = self._key(target_prefix + info.key[len(source_prefix) :])
            self._retrying(
                f"copy {info.key}",
                key=info.key,
                action=lambda: self.client.copy(
                    {"Bucket": self.bucket, "Key": self._key(info.key)},
                    self.bucket,
                    target,
                    Config=self.transfer,
                ),
            )

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            list(pool.map(copy, objects))
        return len(objects)

    def local_path(self, prefix: str) -> Path | None:
        return None


def _object_size(answer: dict[str, Any]) -> int:
    """The whole object's size, from a ranged answer (``bytes 0-15/1234``) or, where the
    server ignored the range, the answer's own length."""
    whole = str(answer.get("ContentRange", "")).rpartition("/")[2]
    return int(whole) if whole.isdigit() else int(answer["ContentLength"])


def _finish(futures: list[Future[None]], *, failed: bool = False) -> None:
    """Wait for ``futures`` and raise the first failure; at a failure (theirs, or one already
    ``failed`` elsewhere) cancel those not started, and wait for those running, which write to
    a file about to be closed."""
    if not failed:
        wait(futures, return_when=FIRST_EXCEPTION)
    for future in futures:
        future.cancel()
    wait(futures)
    if failed:
        return
    for future in futures:
        if not future.cancelled() and (error := future.exception()) is not None:
            raise error


def s3_store_from_url(url: str, *, attempts: int, first_wait_seconds: float) -> S3Store:
    """The store of ``s3://bucket[/prefix]?conn_id=...``, with a client from the Amazon
    provider's ``S3Hook``: the connection is read as Airflow users expect (login and password
    as keys, ``endpoint_url`` for MinIO, ``region_name``, ``role_arn`` and the other role
    assumption settings, ``verify``, ``config_kwargs`` such as proxies, a profile), which
    Airflow resolves from the environment, a secrets backend or the metadata DB.
    ``config_kwargs`` override this store's client defaults (single attempts, since the store
    retries each operation as a whole; timeouts; 32 connections; path-style addressing, or the
    extra's ``addressing_style``; bodies sent with their CRC32, unsigned)."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    parsed = urlparse(url)
    if not parsed.netloc:
        raise ObjectStoreError(f"object store {url!r}: give a bucket, s3://<bucket>[/<prefix>]")
    conn_id = parse_qs(parsed.query).get("conn_id", [DEFAULT_CONNECTION])[0]
    hook = S3Hook(aws_conn_id=conn_id)
    connection = hook.conn_config
    if connection.conn_id != conn_id:  # the hook would go on with AWS's default credentials
        raise ObjectStoreError(f"object store {url!r}: no Airflow connection {conn_id!r}")
    given = hook.config
    s3_settings = {
        "addressing_style": connection.extra_config.get("addressing_style", "path"),
        # Over http as over https, a body's CRC32 goes with it, not its SHA-256: a second
        # pass over every byte uploaded, on the core the S3 server may share (see
        # docs/concepts/tasks-and-catalog.md).
        "payload_signing_enabled": False,
    } | (given.s3 or {})
    defaults = Config(
        retries={"total_max_attempts": 1},  # retried above, with backoff, as one operation
        connect_timeout=5,
        read_timeout=60,
        max_pool_connections=32,
    )
    client = hook.get_client_type(
        region_name=connection.region_name or DEFAULT_REGION,
        # The connection's ``s3`` settings join the store's, one by one, not all or nothing.
        config=defaults.merge(given).merge(Config(s3=s3_settings)),
    )
    return S3Store(
        client=client,
        bucket=parsed.netloc,
        prefix=parsed.path.strip("/"),
        attempts=attempts,
        first_wait_seconds=first_wait_seconds,
    )
