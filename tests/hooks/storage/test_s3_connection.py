"""The S3 store's client comes from the Amazon provider's ``S3Hook``: what an Airflow user puts
in an ``aws`` connection works (an assumed role, ``verify``, proxies and other
``config_kwargs``, a region), MinIO-style connections (keys, ``endpoint_url``) as before, and
the store's own client defaults stay unless the connection says otherwise."""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from hooks.storage.s3_store import S3Store, s3_store_from_url
from octotrain.storage import ObjectStoreError
from tests.conftest import S3_CONNECTION
from tests.radosgw import S3Endpoint


def _store(monkeypatch: pytest.MonkeyPatch, extra: dict[str, Any], **conn: Any) -> S3Store:
    connection = {"conn_type": "aws", "login": "access-key", "password": "secret-key"}
    monkeypatch.setenv("AIRFLOW_CONN_STORE", json.dumps(connection | conn | {"extra": extra}))
    return s3_store_from_url("s3://bucket/prefix?conn_id=store", attempts=1, first_wait_seconds=0)


def test_a_minio_style_connection_keeps_its_endpoint_keys_and_the_store_s_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _store(monkeypatch, {"endpoint_url": "http://minio.example:9000"})
    client = store.client
    assert client.meta.endpoint_url == "http://minio.example:9000"
    assert client.meta.region_name == "us-east-1"
    credentials = client._request_signer._credentials
    assert (credentials.access_key, credentials.secret_key) == ("access-key", "secret-key")
    config = client.meta.config
    assert config.retries["total_max_attempts"] == 1  # the store retries whole operations
    assert (config.connect_timeout, config.read_timeout) == (5, 60)
    assert config.max_pool_connections == 32
    assert config.s3 == {"addressing_style": "path", "payload_signing_enabled": False}
    assert (store.bucket, store.prefix) == ("bucket", "prefix/")


def test_verify_proxies_and_config_kwargs_of_the_connection_are_honoured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("")
    store = _store(
        monkeypatch,
        {
            "endpoint_url": "https://s3.internal:9000",
            "region_name": "eu-west-3",
            "verify": str(bundle),
            "config_kwargs": {
                "proxies": {"https": "http://proxy.internal:3128"},
                "read_timeout": 300,
                "s3": {"addressing_style": "virtual"},
            },
        },
    )
    client = store.client
    assert client.meta.region_name == "eu-west-3"
    assert client._endpoint.http_session._verify == str(bundle)
    config = client.meta.config
    assert config.proxies == {"https": "http://proxy.internal:3128"}
    assert config.read_timeout == 300
    assert config.s3 == {"addressing_style": "virtual", "payload_signing_enabled": False}
    assert config.connect_timeout == 5  # what the connection leaves alone stays the store's
    unverified = _store(monkeypatch, {"endpoint_url": "https://s3.internal", "verify": False})
    assert unverified.client._endpoint.http_session._verify is False


_ASSUMED = """<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
<AssumeRoleResult><Credentials><AccessKeyId>ASIAROLEKEY</AccessKeyId>
<SecretAccessKey>role-secret</SecretAccessKey><SessionToken>role-token</SessionToken>
<Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>
<AssumedRoleUser><AssumedRoleId>AROAX:octotrain</AssumedRoleId>
<Arn>arn:aws:sts::123456789012:assumed-role/octotrain-store/octotrain</Arn></AssumedRoleUser>
</AssumeRoleResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>
</AssumeRoleResponse>"""


@pytest.fixture
def sts() -> Iterator[tuple[str, list[dict[str, list[str]]]]]:
    """A stand-in for AWS STS on 127.0.0.1 that grants every AssumeRole; its URL and the
    requests it received."""
    received: list[dict[str, list[str]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            received.append(parse_qs(self.rfile.read(length).decode()))
            body = _ASSUMED.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def test_a_role_in_the_connection_is_assumed_and_its_credentials_used(
    monkeypatch: pytest.MonkeyPatch, sts: tuple[str, list[dict[str, list[str]]]]
) -> None:
    """``role_arn``: the hook asks STS (the connection's ``service_config`` points it at a
    local stand-in) for the role's credentials, and the client signs with them."""
    url, received = sts
    role = "arn:aws:iam::123456789012:role/octotrain-store"
    store = _store(
        monkeypatch,
        {"role_arn": role, "region_name": "eu-west-1",
         "service_config": {"sts": {"endpoint_url": url}}},
    )  # fmt: skip
    credentials = store.client._request_signer._credentials.get_frozen_credentials()
    assert (credentials.access_key, credentials.token) == ("ASIAROLEKEY", "role-token")
    [request] = received
    assert request["Action"] == ["AssumeRole"] and request["RoleArn"] == [role]


def test_a_missing_connection_is_named_not_replaced_by_default_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_NOWHERE", raising=False)
    with pytest.raises(ObjectStoreError, match="no Airflow connection 'nowhere'"):
        s3_store_from_url("s3://bucket?conn_id=nowhere", attempts=1, first_wait_seconds=0)


@pytest.mark.parametrize("signed", [False, True], ids=["default", "signed-by-connection"])
def test_an_upload_goes_with_its_crc32_its_sha256_only_if_the_connection_asks(
    monkeypatch: pytest.MonkeyPatch, s3_server: S3Endpoint, tmp_path: Path, signed: bool
) -> None:
    """Over plain http botocore would hash every byte sent twice (CRC32, then SHA-256 for the
    signature): the store sends the CRC32 only, unless the connection's ``config_kwargs``
    turn payload signing back on. Either way the server takes it, whole and in parts."""
    connection = json.loads(os.environ[f"AIRFLOW_CONN_{S3_CONNECTION.upper()}"])
    if signed:
        connection["extra"]["config_kwargs"] = {"s3": {"payload_signing_enabled": True}}
    monkeypatch.setenv("AIRFLOW_CONN_SIGNING", json.dumps(connection))
    bucket = f"signing-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=bucket)
    found = s3_store_from_url(f"s3://{bucket}?conn_id=signing", attempts=1, first_wait_seconds=0)
    store = S3Store(client=found.client, bucket=bucket, multipart_chunk_mib=5)
    sent: dict[str, dict[str, str]] = {}

    def capture(request: Any, event_name: str, **_: Any) -> None:
        sent[event_name.rsplit(".", 1)[-1]] = {
            name.lower(): value.decode() if isinstance(value, bytes) else value
            for name, value in request.headers.items()
        }

    store.client.meta.events.register("before-send.s3", capture)
    for name, size in (("small.bin", 1000), ("large.bin", 6 * 1024 * 1024)):
        data = os.urandom(size)
        (tmp_path / name).write_bytes(data)
        store.put_file(name, tmp_path / name)
        store.get_file(name, tmp_path / "back" / name)
        assert (tmp_path / "back" / name).read_bytes() == data
    for operation in ("PutObject", "UploadPart"):
        headers = sent[operation]
        assert "x-amz-checksum-crc32" in headers
        payload = headers["x-amz-content-sha256"]
        assert (payload != "UNSIGNED-PAYLOAD") is signed, operation
