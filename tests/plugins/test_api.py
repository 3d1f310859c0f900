"""The plugin API requires an Airflow user on every route, and serves the catalog."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from airflow.api_fastapi.app import create_auth_manager
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from hooks.catalog import CatalogHook, catalog_for
from hooks.object_store import LocalFolderStore
from plugins.api.app import create_app
from plugins.octotrain_plugin import OctotrainPlugin
from tests.factories import seed


@pytest.fixture
def client(octotrain_env: Path) -> Iterator[TestClient]:
    catalog_for.cache_clear()
    with TestClient(create_app()) as test_client:
        yield test_client
    catalog_for.cache_clear()


def token() -> str:
    manager = create_auth_manager()
    return manager.generate_jwt(SimpleAuthManagerUser(username="alice", role="admin"))


def concrete_paths() -> list[tuple[str, str]]:
    routes = [route for route in create_app().routes if isinstance(route, APIRoute)]
    assert routes
    return [
        (method, route.path.replace("{task_id}", "1"))
        for route in routes
        for method in route.methods
    ]


def test_plugin_mounts_the_app_under_octotrain() -> None:
    [app] = OctotrainPlugin.fastapi_apps
    assert app["url_prefix"] == "/octotrain"


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_every_route_answers_401_without_a_token(client: TestClient) -> None:
    for method, path in concrete_paths():
        response = client.request(method, path)
        assert response.status_code == 401, (method, path, response.text)


def test_tasks_and_runs_with_a_token(
    client: TestClient, catalog: CatalogHook, store: LocalFolderStore, airflow_metadata_db: None
) -> None:
    demo = seed(catalog, store)
    headers = {"Authorization": f"Bearer {token()}"}
    tasks = client.get("/api/v1/tasks", headers=headers)
    assert tasks.status_code == 200, tasks.text
    [task] = tasks.json()
    assert (task["id"], task["name"], task["node_count"]) == (demo.task_id, "演示-房价回归", 2)
    assert task["last_run"] is None
    assert client.get(f"/api/v1/tasks/{demo.task_id}/runs", headers=headers).json() == []
    missing = client.get("/api/v1/tasks/999/runs", headers=headers)
    assert missing.status_code == 404
    assert "999" in missing.json()["detail"]
