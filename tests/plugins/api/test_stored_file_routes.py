"""A model version's and a dataset version's files over REST: one file as stored, all of them
as a zip, only the files the version's manifest lists, and only for the project's members."""

from __future__ import annotations

import io
import zipfile

from tests.plugins.api.conftest import Api

BASE = "/api/v1/projects/demo"
MODEL_VERSIONS = f"{BASE}/model-repositories/house-price-model/versions"
DATASET_VERSIONS = f"{BASE}/datasets/house-prices/versions"
FILES = {"model.json": b'{"weights": [1, 2]}', "notes/read me.txt": "trained on v1 ✓".encode()}


def _imported(api: Api, url: str, **form: str) -> dict:
    answer = api.client.post(
        url,
        data=form,
        files=[("files", (name, content, "application/octet-stream"))
               for name, content in FILES.items()],
        headers=api.as_user("alice"),
    )  # fmt: skip
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_a_model_version_s_files_one_by_one_and_as_a_zip(api: Api) -> None:
    version = _imported(api, MODEL_VERSIONS)["version"]
    url, alice = f"{MODEL_VERSIONS}/{version}", api.as_user("alice")
    for name, content in FILES.items():
        got = api.client.get(f"{url}/files/{name}", headers=alice)
        assert got.status_code == 200 and got.content == content
        assert got.headers["content-length"] == str(len(content))
        assert "attachment;" in got.headers["content-disposition"]
    zipped = api.client.get(f"{url}/download", headers=alice)
    assert zipped.status_code == 200 and zipped.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(zipped.content)) as archive:
        assert {name: archive.read(name) for name in archive.namelist()} == FILES
    missing = api.client.get(f"{url}/files/other.bin", headers=alice)
    assert missing.status_code == 404 and "has no file 'other.bin'" in missing.json()["detail"]
    escaping = api.client.get(f"{url}/files/..%2F..%2Fsecrets", headers=alice)
    assert escaping.status_code == 404  # never a path outside the manifest
    assert api.client.get(f"{url}/download", headers=api.as_user("bob")).status_code == 404
    assert api.client.get(f"{url}/download").status_code == 401


def test_a_dataset_version_s_files_as_a_zip(api: Api) -> None:
    version = _imported(api, DATASET_VERSIONS, version="v-files")["version"]
    zipped = api.client.get(f"{DATASET_VERSIONS}/{version}/download", headers=api.as_user("alice"))
    assert zipped.status_code == 200
    with zipfile.ZipFile(io.BytesIO(zipped.content)) as archive:
        assert sorted(archive.namelist()) == sorted(FILES)
