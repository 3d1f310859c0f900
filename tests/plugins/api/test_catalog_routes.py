"""Catalog management over HTTP: every answer in one error shape, uploads, refusals."""

from __future__ import annotations

import pytest

from tests.plugins.api.conftest import Api

BASE = "/api/v1/projects/demo"


def test_create_show_change_delete_a_resource_spec(api: Api) -> None:
    alice = api.as_user("alice")
    body = {"name": "http-spec", "cpu": 2, "memory_mib": 4096, "max_nodes": 2}
    created = api.client.post(f"{BASE}/resource-specs", json=body, headers=alice)
    assert created.status_code == 201, created.text
    assert created.json() | {} == {
        "project": "demo",
        "name": "http-spec",
        "kind": "cce",
        "cpu": 2.0,
        "memory_mib": 4096,
        "gpu_count": 0,
        "gpu_type": "",
        "max_nodes": 2,
        "mount_volume": "",
    }
    changed = api.client.patch(
        f"{BASE}/resource-specs/http-spec", json={"max_nodes": 3}, headers=alice
    )
    assert changed.json()["max_nodes"] == 3
    assert api.client.delete(f"{BASE}/resource-specs/http-spec", headers=alice).status_code == 204
    missing = api.client.get(f"{BASE}/resource-specs/http-spec", headers=alice)
    assert missing.status_code == 404
    assert missing.json()["detail"] == "resource spec 'http-spec' not found in project 'demo'"


def test_broken_rules_answer_422_with_every_field(api: Api) -> None:
    response = api.client.post(
        f"{BASE}/algorithms",
        json={"name": "bad name", "image": "Not An Image", "command": [], "extra": 1},
        headers=api.as_user("alice"),
    )
    assert response.status_code == 422
    fields = {problem["field"] for problem in response.json()["problems"]}
    assert fields == {"name", "image", "command", "sample_type", "extra"}
    assert "name: must be 1-64 characters" in response.json()["detail"]


def test_an_algorithm_keeps_its_metric_definitions_and_refuses_a_bad_regex(api: Api) -> None:
    alice = api.as_user("alice")
    body = {
        "name": "plain-script",
        "image": "python:3.11-slim",
        "command": ["python", "train.py"],
        "sample_type": "table",
        "metric_definitions": [{"name": "loss", "regex": "loss=([0-9.e-]+)"}],
    }
    created = api.client.post(f"{BASE}/algorithms", json=body, headers=alice)
    assert created.status_code == 201, created.text
    assert created.json()["metric_definitions"] == [
        {
            "name": "loss",
            "x": "step",
            "ys": [],
            "description": "",
            "smooth": False,
            "regex": "loss=([0-9.e-]+)",
        }
    ]
    refused = api.client.patch(
        f"{BASE}/algorithms/plain-script",
        json={"metric_definitions": [{"name": "loss", "regex": "loss=(a+)+"}]},
        headers=alice,
    )
    assert refused.status_code == 422
    [problem] = refused.json()["problems"]
    assert problem["field"] == "metric_definitions.0.regex"
    assert "backtrack catastrophically" in problem["rule"]
    shown = api.client.get(f"{BASE}/algorithms/plain-script", headers=alice).json()
    assert shown["metric_definitions"] == created.json()["metric_definitions"]


def test_a_body_that_is_not_json_answers_422_in_the_same_shape(api: Api) -> None:
    response = api.client.post(
        f"{BASE}/algorithms",
        content=b"{not json",
        headers=api.as_user("alice") | {"Content-Type": "application/json"},
    )
    assert response.status_code == 422
    (problem,) = response.json()["problems"]
    assert problem["field"] == "body"  # it was "1", the position where decoding broke
    assert problem["rule"].startswith("is not valid JSON: Expecting property name")


def test_deleting_what_is_in_use_answers_409_with_the_referrers(api: Api) -> None:
    response = api.client.delete(f"{BASE}/algorithms/linear-regression-numpy",
                                 headers=api.as_user("alice"))  # fmt: skip
    assert response.status_code == 409
    assert response.json()["referrers"] == ["task '演示-房价回归'"]


def test_lowering_max_nodes_below_a_saved_task_answers_409_with_the_tasks(api: Api) -> None:
    alice = api.as_user("alice")
    for url in (f"{BASE}/resource-specs/cpu-small", BASE):
        response = api.client.patch(url, json={"max_nodes": 1}, headers=alice)
        assert response.status_code == 409, response.text
        assert "task '演示-房价回归' (2 nodes)" in response.json()["referrers"]
        assert "cannot have max_nodes 1" in response.json()["detail"]
        assert api.client.get(url, headers=alice).json()["max_nodes"] > 1


def test_a_dataset_version_is_uploaded_published_and_deleted(api: Api) -> None:
    alice = api.as_user("alice")
    created = api.client.post(
        f"{BASE}/datasets/house-prices/versions",
        data={"version": "v7"},
        files=[
            ("files", ("train.csv", b"x,y\n1,2\n", "text/csv")),
            ("files", ("extra/notes.txt", b"hello", "text/plain")),
        ],
        headers=alice,
    )
    assert created.status_code == 201, created.text
    assert created.json() | {"created_at": None, "content_digest": None} == {
        "dataset": "house-prices",
        "version": "v7",
        "status": "imported_awaiting_release",
        "size_bytes": 13,
        "file_count": 2,
        "content_digest": None,
        "produced": [],
        "created_at": None,
    }
    keys = [info.key for info in api.store.list("datasets/demo/house-prices/v7")]
    assert keys == [
        "datasets/demo/house-prices/v7/extra/notes.txt",
        "datasets/demo/house-prices/v7/train.csv",
    ]
    published = api.client.post(f"{BASE}/datasets/house-prices/versions/v7/publish", headers=alice)
    assert published.json()["status"] == "published"
    dataset = api.client.get(f"{BASE}/datasets/house-prices", headers=alice).json()
    assert [v["version"] for v in dataset["versions"]] == ["v1", "v7"]
    deleted = api.client.delete(f"{BASE}/datasets/house-prices/versions/v7", headers=alice)
    assert deleted.status_code == 204
    assert api.store.list("datasets/demo/house-prices/v7") == []


def test_an_upload_with_an_escaping_path_writes_nothing(api: Api) -> None:
    response = api.client.post(
        f"{BASE}/model-repositories/house-price-model/versions",
        files=[
            ("files", ("model.bin", b"ok", "application/octet-stream")),
            ("files", ("../../escape.bin", b"bad", "application/octet-stream")),
        ],
        headers=api.as_user("alice"),
    )
    assert response.status_code == 422
    assert response.json()["problems"][0]["field"] == "files.../../escape.bin"
    versions = api.client.get(
        f"{BASE}/model-repositories/house-price-model/versions", headers=api.as_user("alice")
    ).json()["model_versions"]
    assert [v["version"] for v in versions] == list(range(1, 11))


def test_a_model_version_is_imported_and_shown_with_its_lineage(api: Api) -> None:
    alice = api.as_user("alice")
    api.client.post(f"{BASE}/model-repositories", json={"name": "imported-model"}, headers=alice)
    created = api.client.post(
        f"{BASE}/model-repositories/imported-model/versions",
        data={"description": "pretrained"},
        files=[("files", ("weights/model.npz", b"\x00\x01", "application/octet-stream"))],
        headers=alice,
    )
    assert created.status_code == 201, created.text
    assert (created.json()["version"], created.json()["source"]) == (1, "imported")
    shown = api.client.get(
        f"{BASE}/model-repositories/imported-model/versions/1", headers=alice
    ).json()
    assert shown["lineage"]["imported_by"] == "alice"
    repository = api.client.get(f"{BASE}/model-repositories/imported-model", headers=alice)
    assert repository.json()["versions"] == [1]


def test_caches_are_created_and_refreshed(api: Api) -> None:
    alice = api.as_user("alice")
    created = api.client.post(
        f"{BASE}/caches",
        json={"name": "http-cache", "dataset": "many", "version": "v3", "ttl_hours": 2},
        headers=alice,
    )
    assert created.status_code == 201, created.text
    assert (created.json()["status"], created.json()["version"]) == ("caching", "v3")
    refreshed = api.client.post(f"{BASE}/caches/stale/refresh", json={}, headers=alice)
    assert refreshed.status_code == 202
    assert (refreshed.json()["status"], refreshed.json()["refresh_requested"]) == ("expired", True)


def test_a_refresh_needs_no_body_and_then_keeps_the_ttl(api: Api) -> None:
    alice = api.as_user("alice")
    ttl = api.client.get(f"{BASE}/caches/stale", headers=alice).json()["ttl_hours"]
    refreshed = api.client.post(f"{BASE}/caches/stale/refresh", headers=alice)
    assert refreshed.status_code == 202, refreshed.text
    assert (refreshed.json()["refresh_requested"], refreshed.json()["ttl_hours"]) == (True, ttl)
    longer = api.client.post(f"{BASE}/caches/stale/refresh", json={"ttl_hours": ttl + 1},
                             headers=alice)  # fmt: skip
    assert longer.json()["ttl_hours"] == ttl + 1
    route = api.client.get("/openapi.json", headers=alice).json()["paths"][
        "/api/v1/projects/{project}/caches/{name}/refresh"
    ]
    assert route["post"]["requestBody"]["required"] is False


@pytest.mark.parametrize(
    ("username", "in_the_path"),
    [("a/b", "a/b"), ("c/d", "c%2Fd"), ("50%", "50%25"), ("tab\tname", "tab%09name"),
     ("..", "%2E%2E"), ("/lead", "/lead"), ("trail/", "trail/"), ("名 字", "名 字")],
)  # fmt: skip
def test_any_member_that_can_be_added_can_be_removed(
    api: Api, username: str, in_the_path: str
) -> None:
    alice = api.as_user("alice")
    members = f"{BASE}/members"
    added = api.client.post(members, json={"username": username}, headers=alice)
    assert added.status_code == 200, added.text
    assert username in added.json()["members"]
    removed = api.client.delete(f"{members}/{in_the_path}", headers=alice)
    assert removed.status_code == 200, removed.text
    assert username not in removed.json()["members"]
    again = api.client.delete(f"{members}/{in_the_path}", headers=alice)
    assert again.status_code == 404
    assert again.json()["detail"] == f"'{username}' is not a member of project 'demo'"


def test_path_parameters_longer_than_any_name_answer_422(api: Api) -> None:
    response = api.client.get(f"/api/v1/projects/{'x' * 65}", headers=api.as_user("alice"))
    assert response.status_code == 422
    assert response.json()["problems"][0]["field"] == "path.project"


def test_the_openapi_document_describes_the_bodies(api: Api) -> None:
    spec = api.client.get("/openapi.json", headers=api.as_user("alice")).json()
    body = spec["paths"]["/api/v1/tasks"]["post"]["requestBody"]["content"]["application/json"]
    assert set(body["schema"]["required"]) == {
        "project",
        "name",
        "resource_spec",
        "algorithm",
        "model_repository",
    }
    assert "$ref" not in str(body)
