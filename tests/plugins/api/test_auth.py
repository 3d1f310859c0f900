"""Every route requires an Airflow user; projects scope what a user sees (404, not 403)."""

from __future__ import annotations

import re

import pytest
from fastapi.routing import APIRoute

from plugins.app import create_app
from tests.plugins.api.conftest import Api

PLACEHOLDERS = {
    "project": "demo",
    "name": "cpu-small",
    "dataset": "house-prices",
    "version": "1",
    "repository": "house-price-model",
    "username": "bob",
    "task_id": "1",
    "run_id": "1",
    "sweep_id": "1",
    "dag_id": "octotrain_task_1",
    "algorithm": "linear-regression-numpy",
}


def concrete_routes() -> list[tuple[str, str]]:
    routes = [route for route in create_app().routes if isinstance(route, APIRoute)]
    assert len(routes) > 40
    return [
        (method, re.sub(r"\{(\w+)\}", lambda m: PLACEHOLDERS[m.group(1)], route.path))
        for route in routes
        for method in sorted(route.methods)
    ]


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_every_route_answers_401_without_a_token(api: Api) -> None:
    for method, path in concrete_routes():
        response = api.client.request(method, path)
        assert response.status_code == 401, (method, path, response.text)
        assert response.json() == {"detail": "Not authenticated"}


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_a_forged_token_is_refused(api: Api) -> None:
    response = api.client.get("/api/v1/projects", headers={"Authorization": "Bearer x.y.z"})
    assert response.status_code == 403


def test_members_see_their_project_and_nothing_of_others(api: Api) -> None:
    bob, carol = api.as_user("bob"), api.as_user("carol")
    listed = api.client.get("/api/v1/projects", headers=bob).json()
    assert [p["name"] for p in listed["projects"]] == ["other"] and listed["total_entries"] == 1
    assert api.client.get("/api/v1/projects", headers=carol).json()["projects"] == []
    for path in (
        "/api/v1/projects/demo",
        "/api/v1/projects/demo/algorithms",
        "/api/v1/projects/demo/resource-specs/cpu-small",
        "/api/v1/projects/demo/datasets/house-prices/versions/v1",
        "/api/v1/projects/demo/model-repositories/house-price-model/versions/1",
        "/api/v1/projects/demo/caches/hot",
    ):
        response = api.client.get(path, headers=bob)
        assert response.status_code == 404, path
        assert response.json()["detail"] == "project 'demo' not found"
    demo_tasks = api.client.get("/api/v1/tasks", headers=api.as_user("alice")).json()["tasks"]
    demo_task = next(task for task in demo_tasks if task["project"] == "demo")
    for method in ("GET", "PATCH", "DELETE"):
        response = api.client.request(
            method, f"/api/v1/tasks/{demo_task['id']}", headers=bob, json={}
        )
        assert response.status_code == 404, method
    assert api.client.get("/api/v1/tasks", headers=bob).json() == {"tasks": [], "total_entries": 0}


def test_only_administrators_manage_projects(api: Api) -> None:
    bob = api.as_user("bob")
    response = api.client.post("/api/v1/projects", json={"name": "mine"}, headers=bob)
    assert response.status_code == 403
    assert response.json()["detail"] == "only administrators may create projects"
    response = api.client.post(
        "/api/v1/projects/other/members", json={"username": "carol"}, headers=bob
    )
    assert response.status_code == 403
