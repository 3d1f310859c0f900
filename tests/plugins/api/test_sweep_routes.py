"""Sweeps over REST without a scheduler: a sweep that cannot run is refused naming each field
and leaves nothing; one that can is created, listed, shown, started (a run of the sweeps'
DAG, a retried start finding it, forgotten when Airflow refuses it) and stopped; only the task's
project's members see it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hooks.airflow.dag_runs import TriggeredRun
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.named_objects import Algorithms
from octotrain.contracts import SWEEPS_DAG_ID
from octotrain.errors import Conflict
from octotrain.settings import get_settings
from plugins.api import sweep_routes
from tests.factories import ADMIN, VALID_TASK
from tests.plugins.api.conftest import Api

TOY = {
    "name": "sweep-routes-toy",
    "image": "python:3.11",
    "command": ["python", "t.py"],
    "sample_type": "table",
    "parameters": [
        {"name": "lr", "type": "float", "default": 0.1, "min": 0.0, "max": 1.0},
        {"name": "depth", "type": "int", "default": 3, "min": 1, "max": 10},
        {"name": "opt", "type": "enum", "choices": ["sgd", "adam"], "default": "sgd"},
    ],
    "metric_definitions": [{"name": "loss", "regex": "step=(?P<step>\\d+) loss=(?P<loss>\\S+)"}],
}
SWEEP = {
    "name": "search",
    "parameters": {
        "lr": {"type": "float", "low": 0.001, "high": 0.5, "log": True},
        "depth": {"type": "int", "low": 2, "high": 8},
        "opt": {"type": "choice", "choices": ["sgd", "adam"]},
    },
    "objective": {"chart": "loss", "series": "loss"},
    "budget": {"trials": 8},
}


@pytest.fixture(scope="module")
def task_id(api: Api) -> int:
    with default_catalog().session() as session:
        Algorithms(session, ADMIN, default_object_store()).create("demo", TOY)
    document = VALID_TASK | {"name": "swept-over-rest", "algorithm": TOY["name"]}
    made = api.client.post("/api/v1/tasks", json=document, headers=api.as_user("alice"))
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


@pytest.fixture
def demo_quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Project demo may hold 8 nodes at once (the local launcher's quota file)."""
    quotas = tmp_path / "local_quotas.toml"
    quotas.write_text("[projects.demo]\nnodes = 8\n")
    monkeypatch.setenv("OCTOTRAIN_LOCAL_QUOTAS_FILE", str(quotas))
    get_settings.cache_clear()
    yield
    monkeypatch.undo()
    get_settings.cache_clear()


def test_a_sweep_that_cannot_run_is_refused_naming_each_field(
    api: Api, task_id: int, demo_quota: None
) -> None:
    alice = api.as_user("alice")
    bad = SWEEP | {
        "parameters": {
            "lr": {"type": "float", "low": 0.001, "high": 20},
            "width": {"type": "int", "low": 1, "high": 4},
            "opt": {"type": "choice", "choices": ["sgd", "rmsprop"]},
        },
        "objective": {"chart": "accuracy", "series": "top1"},
        "budget": {"trials": 0},
        "concurrency": 9,
    }
    answer = api.client.post(f"/api/v1/tasks/{task_id}/sweeps", json=bad, headers=alice)
    assert answer.status_code == 422, answer.text
    problems = {item["field"]: item["rule"] for item in answer.json()["problems"]}
    assert problems["budget.trials"] == "must be at least 1, got 0"
    assert (
        problems["parameters.lr.high"]
        == "must lie within the parameter's bounds [0.0, 1.0], got 20"
    )
    assert problems["parameters.width"].startswith(
        "is not a parameter of algorithm sweep-routes-toy (its parameters: lr, depth, opt)"
    )
    assert problems["parameters.opt.choices.1"].startswith("must be one of ['sgd', 'adam']")
    assert problems["objective.chart"].startswith("'accuracy' is not a chart algorithm")
    assert "loss" in problems["objective.chart"]
    assert problems["concurrency"] == (
        "9 runs at once need 9 nodes at once and project demo's quota is 8 nodes "
        "(local_quotas.toml)"
    )
    listed = api.client.get(f"/api/v1/tasks/{task_id}/sweeps", headers=alice)
    assert listed.json() == []  # nothing was saved


def test_a_sweep_is_created_started_once_shown_and_stopped(
    api: Api, task_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = api.as_user("alice")
    made = api.client.post(f"/api/v1/tasks/{task_id}/sweeps", json=SWEEP, headers=alice)
    assert made.status_code == 201, made.text
    sweep = made.json()
    assert (sweep["state"], sweep["trials"], sweep["best"]) == ("created", [], None)
    again = api.client.post(f"/api/v1/tasks/{task_id}/sweeps", json=SWEEP, headers=alice)
    assert again.status_code == 409  # one name per task
    triggered: list[tuple[str, dict[str, Any], str]] = []

    def trigger(*, dag_id: str, conf: dict[str, Any], request_id: str, **_: object) -> TriggeredRun:
        triggered.append((dag_id, conf, request_id))
        return TriggeredRun(dag_id, f"request__{request_id}", "queued", conf, created=True)

    monkeypatch.setattr(sweep_routes, "trigger_dag_run", trigger)
    started = api.client.post(f"/api/v1/sweeps/{sweep['id']}/start", headers=alice)
    assert started.status_code == 202, started.text
    assert started.json()["state"] == "running"
    assert started.json()["airflow_run_id"] == f"request__sweep-{sweep['id']}"
    assert triggered == [(SWEEPS_DAG_ID, {"sweep_id": sweep["id"]}, f"sweep-{sweep['id']}")]
    repeated = api.client.post(f"/api/v1/sweeps/{sweep['id']}/start", headers=alice)
    assert repeated.status_code == 202  # a retried start finds the DAG run the first one made
    assert repeated.json()["airflow_run_id"] == started.json()["airflow_run_id"]
    assert {request for _, _, request in triggered} == {f"sweep-{sweep['id']}"}
    best = api.client.post(f"/api/v1/sweeps/{sweep['id']}/rerun-best", headers=alice)
    assert best.status_code == 409 and "no finished trial" in best.json()["detail"]
    stopped = api.client.post(f"/api/v1/sweeps/{sweep['id']}/stop", headers=alice)
    assert stopped.status_code == 202
    assert (stopped.json()["state"], stopped.json()["message"]) == (
        "stopping",
        "Stopping: asked by alice",
    )
    listed = api.client.get(f"/api/v1/tasks/{task_id}/sweeps", headers=alice).json()
    assert [(item["name"], item["state"]) for item in listed] == [("search", "stopping")]
    assert (
        api.client.get(f"/api/v1/sweeps/{sweep['id']}", headers=api.as_user("bob")).status_code
        == 404
    )


def test_a_start_airflow_refuses_leaves_the_sweep_as_it_was(
    api: Api, task_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = api.as_user("alice")
    made = api.client.post(
        f"/api/v1/tasks/{task_id}/sweeps", json=SWEEP | {"name": "refused"}, headers=alice
    )
    sweep_id = made.json()["id"]

    def refused(**_: object) -> TriggeredRun:
        raise Conflict(f"Airflow has not parsed DAG {SWEEPS_DAG_ID} yet")

    monkeypatch.setattr(sweep_routes, "trigger_dag_run", refused)
    answer = api.client.post(f"/api/v1/sweeps/{sweep_id}/start", headers=alice)
    assert answer.status_code == 409
    shown = api.client.get(f"/api/v1/sweeps/{sweep_id}", headers=alice).json()
    assert (shown["state"], shown["airflow_run_id"], shown["started_at"]) == ("created", "", None)
    made_and_started = api.client.post(
        f"/api/v1/tasks/{task_id}/sweeps",
        params={"start": "true"},
        json=SWEEP | {"name": "never-made"},
        headers=alice,
    )
    assert made_and_started.status_code == 409  # and the sweep it made is gone
    names = [
        item["name"]
        for item in api.client.get(f"/api/v1/tasks/{task_id}/sweeps", headers=alice).json()
    ]
    assert "never-made" not in names and "refused" in names
    stopped = api.client.post(f"/api/v1/sweeps/{sweep_id}/stop", headers=alice).json()
    assert (stopped["state"], stopped["message"]) == (
        "stopped",
        "Stopped by alice before it started",
    )
