"""Uploads' file names over HTTP: every name the rules accept is imported, every other one is
refused with 422 naming the file and the limit, and a refusal writes nothing (no version, no
object, no temporary file)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.file_names import name_of, path_of
from tests.plugins.api.conftest import Api

BASE = "/api/v1/projects/demo"
DATASET_VERSIONS = f"{BASE}/datasets/house-prices/versions"
MODEL_VERSIONS = f"{BASE}/model-repositories/house-price-model/versions"


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The temporary folder uploads are saved in during a request (empty after it)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder


def upload(api: Api, url: str, names: list[str], **form: str) -> tuple[int, dict]:
    response = api.client.post(
        url,
        data=form,
        files=[("files", (name, name.encode(), "application/octet-stream")) for name in names],
        headers=api.as_user("alice"),
    )
    return response.status_code, response.json()


def version_names(api: Api, url: str) -> list[object]:
    answer = api.client.get(url, headers=api.as_user("alice")).json()
    rows = answer["dataset_versions"] if "dataset_versions" in answer else answer["model_versions"]
    return [row["version"] for row in rows]


def test_the_reported_75_character_name_and_255_byte_names_are_imported(
    api: Api, scratch: Path
) -> None:
    names = ["数" * 75, name_of(224), name_of(255), f"{name_of(254)}/{name_of(255)}"]
    status, body = upload(api, DATASET_VERSIONS, names, version="long-names")
    assert status == 201, body
    prefix = "datasets/demo/house-prices/long-names"
    assert sorted(info.key for info in api.store.list(prefix)) == sorted(
        f"{prefix}/{name}" for name in names
    )
    status, body = upload(api, MODEL_VERSIONS, [name_of(255)])
    assert status == 201, body
    assert list(scratch.iterdir()) == []


def test_a_256_byte_name_is_refused_and_nothing_is_written(api: Api, scratch: Path) -> None:
    too_long = f"weights/{name_of(256)}"
    before = version_names(api, MODEL_VERSIONS)
    status, body = upload(api, MODEL_VERSIONS, ["ok.bin", too_long])
    assert status == 422
    assert body["problems"] == [
        {
            "field": f"files.{too_long}",
            "rule": "each folder or file name in a path may be at most 255 bytes (UTF-8); "
            "this path has one of 256 bytes",
        }
    ]
    assert version_names(api, MODEL_VERSIONS) == before
    assert api.store.list(f"models/demo/house-price-model/{len(before) + 1}") == []
    assert list(scratch.iterdir()) == []


def test_a_key_over_the_store_limit_is_refused_and_nothing_is_written(
    api: Api, scratch: Path
) -> None:
    prefix = "datasets/demo/house-prices/too-deep"
    room = api.store.max_key_bytes - len(prefix) - 1
    status, body = upload(api, DATASET_VERSIONS, ["ok.csv", path_of(room + 1)], version="too-deep")
    assert status == 422
    [problem] = body["problems"]
    assert problem["field"] == f"files.{path_of(room + 1)}"
    assert problem["rule"].endswith(
        f"the object store holds keys of at most {api.store.max_key_bytes} bytes, "
        f"so a path here may be at most {room} bytes"
    )
    assert "too-deep" not in version_names(api, DATASET_VERSIONS)
    assert api.store.list(prefix) == []
    assert list(scratch.iterdir()) == []


def test_a_control_character_sent_as_is_is_refused(api: Api, scratch: Path) -> None:
    """Clients percent-encode control characters in a part's file name; a raw one must be
    refused, not stored."""
    boundary = "octotrain-boundary"
    body = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="files"; filename="bell\x07.bin"\r\n\r\n'
        f"ring\r\n--{boundary}--\r\n"
    ).encode()
    response = api.client.post(
        MODEL_VERSIONS,
        content=body,
        headers=api.as_user("alice")
        | {"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["problems"] == [
        {"field": "files.bell\x07.bin", "rule": "must not contain control characters"}
    ]
    assert list(scratch.iterdir()) == []
