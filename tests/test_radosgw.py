"""The S3 server the tests run against (tests/radosgw.py) is a real one, kept to loopback."""

from __future__ import annotations

import hashlib

import psutil

from tests.radosgw import S3Endpoint, pids_in

MIB = 1024 * 1024


def test_every_process_of_the_cluster_listens_on_loopback_only(s3_server: S3Endpoint) -> None:
    pids = pids_in(s3_server.folder)
    names = sorted(psutil.Process(pid).name() for pid in pids)
    assert names == ["ceph-mon", "ceph-osd", "radosgw"], names
    listening = {
        connection.laddr.ip
        for pid in pids
        for connection in psutil.Process(pid).net_connections(kind="inet")
        if connection.status == psutil.CONN_LISTEN
    }
    assert listening == {"127.0.0.1"}


def test_multipart_uploads_get_the_etag_real_s3_gives(s3_server: S3Endpoint) -> None:
    """The MD5 of the parts' MD5s, then the number of parts, as S3 and MinIO give it."""
    client = s3_server.client()
    client.create_bucket(Bucket="etags")
    parts = [b"a" * 5 * MIB, b"b" * 1024]
    upload = client.create_multipart_upload(Bucket="etags", Key="two-parts")
    done = [
        {"PartNumber": number, "ETag": client.upload_part(
            Bucket="etags", Key="two-parts", UploadId=upload["UploadId"], PartNumber=number,
            Body=part)["ETag"]}
        for number, part in enumerate(parts, start=1)
    ]  # fmt: skip
    client.complete_multipart_upload(
        Bucket="etags", Key="two-parts", UploadId=upload["UploadId"],
        MultipartUpload={"Parts": done},
    )  # fmt: skip
    digests = b"".join(hashlib.md5(part).digest() for part in parts)
    expected = f'"{hashlib.md5(digests).hexdigest()}-2"'
    assert client.head_object(Bucket="etags", Key="two-parts")["ETag"] == expected
    client.delete_object(Bucket="etags", Key="two-parts")
    client.delete_bucket(Bucket="etags")
