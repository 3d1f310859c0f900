"""Training tasks over HTTP: every problem in one 422, nothing saved; check, change, copy,
delete; stopping a run (its Airflow run noted with who stopped it); resuming one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from airflow.models.dagrun import DagRun
from airflow.utils.session import create_session
from airflow.utils.state import DagRunState
from airflow.utils.types import DagRunType
from sqlalchemy import delete, select

from hooks.airflow.dag_runs import TriggeredRun
from hooks.runs.checkpoint_sync import CheckpointSync
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_files import FolderRunFiles
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.models import Run, RunState
from octotrain.errors import Conflict
from octotrain.planning import run_key
from octotrain.run_layout import RunLayout, RunObjects
from octotrain.settings import get_settings
from plugins.api import task_routes
from tests.factories import VALID_TASK
from tests.plan_rows import recorded
from tests.plugins.api.conftest import Api


def test_a_task_with_many_problems_answers_them_all_and_saves_nothing(api: Api) -> None:
    alice = api.as_user("alice")
    before = api.client.get("/api/v1/tasks", headers=alice).json()
    response = api.client.post(
        "/api/v1/tasks",
        json=VALID_TASK
        | {
            "name": "http task",
            "priority": 51,
            "description": "a|b",
            "node_count": 9,
            "parameters": {"epochs": 0, "nope": 1},
            "data_inputs": [{"dataset": "raw", "version": "v1"}],
        },
        headers=alice,
    )
    assert response.status_code == 422
    fields = {problem["field"] for problem in response.json()["problems"]}
    assert fields == {
        "name",
        "priority",
        "description",
        "node_count",
        "parameters.epochs",
        "parameters.nope",
        "data_inputs.0",
    }
    assert api.client.get("/api/v1/tasks", headers=alice).json() == before


def test_check_create_change_copy_delete(api: Api) -> None:
    alice = api.as_user("alice")
    document = VALID_TASK | {
        "name": "http-task",
        "resource_spec": "modelarts-gpu",
        "algorithm": "image-algo",
        "parameters": {"n": 4},
    }
    checked = api.client.post("/api/v1/tasks/check", json=document, headers=alice)
    assert checked.json() == {
        "valid": True,
        "container_user": "ma-user",
        "parameters": {"lr": 0.1, "optimizer": "adam", "shuffle": True, "tag": "x", "n": 4},
        "env": {"LOG_LEVEL": "info"},
    }
    created = api.client.post("/api/v1/tasks", json=document, headers=alice)
    assert created.status_code == 201, created.text
    task = created.json()
    assert (task["dag_id"], task["container_user"], task["last_run"]) == (
        f"octotrain_task_{task['id']}",
        "ma-user",
        None,
    )
    changed = api.client.patch(f"/api/v1/tasks/{task['id']}", json={"priority": 9}, headers=alice)
    assert changed.json()["priority"] == 9
    copied = api.client.post(f"/api/v1/tasks/{task['id']}/copy", json={}, headers=alice)
    assert (copied.status_code, copied.json()["name"]) == (201, "http-task-copy")
    assert api.client.get(f"/api/v1/tasks/{task['id']}/runs", headers=alice).json() == {
        "runs": [],
        "total_entries": 0,
    }
    for task_id in (task["id"], copied.json()["id"]):
        assert api.client.delete(f"/api/v1/tasks/{task_id}", headers=alice).status_code == 204
    assert api.client.get(f"/api/v1/tasks/{task['id']}", headers=alice).status_code == 404


def test_members_create_tasks_in_their_project_only(api: Api) -> None:
    bob = api.as_user("bob")
    theirs = {
        "project": "other",
        "name": "bobs-task",
        "resource_spec": "other-spec",
        "algorithm": "other-algo",
        "model_repository": "other-model",
    }
    assert api.client.post("/api/v1/tasks", json=theirs, headers=bob).status_code == 201
    refused = api.client.post("/api/v1/tasks", json=VALID_TASK, headers=bob)
    assert refused.status_code == 422
    assert refused.json()["problems"] == [
        {"field": "project", "rule": "project 'demo' does not exist"}
    ]
    listed = api.client.get("/api/v1/tasks", params={"project": "other"}, headers=bob).json()
    assert [task["name"] for task in listed["tasks"]] == ["bobs-task"]


@contextmanager
def airflow_run(dag_id: str, run_id: str, *, note: str) -> Iterator[None]:
    """The run in Airflow's metadata DB, with a ``note`` of a person's, removed afterwards."""
    with create_session() as session:
        session.add(DagRun(dag_id=dag_id, run_id=run_id, run_type=DagRunType.MANUAL,
                           state=DagRunState.RUNNING, note=note))  # fmt: skip
    try:
        yield
    finally:
        with create_session() as session:
            session.execute(delete(DagRun).where(DagRun.dag_id == dag_id))


def airflow_note(dag_id: str, run_id: str) -> tuple[str | None, str | None]:
    """The run's note in Airflow and the id of the user it is by."""
    with create_session() as session:
        run = session.scalars(
            select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)
        ).one()
        return run.note, run.dag_run_note.user_id if run.dag_run_note else None


def test_stopping_a_run_raises_its_flag_for_the_user_and_refuses_ended_runs(api: Api) -> None:
    alice, bob = api.as_user("alice"), api.as_user("bob")
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": "stop-me"}, headers=alice
    ).json()
    with default_catalog().session() as session:
        run = Run(task_id=task["id"], airflow_run_id="manual__stop", state=RunState.RUNNING,
                  node_count=1)  # fmt: skip
        session.add(run)
        session.flush()
        run_id = run.id
    stop = f"/api/v1/tasks/{task['id']}/runs/{run_id}/stop"
    assert api.client.post(stop, headers=bob).status_code == 404  # not a member of demo
    assert api.client.post(stop).status_code == 401
    with airflow_run(task["dag_id"], "manual__stop", note="retrain of #12"):
        answer = api.client.post(stop, headers=alice)
        # Airflow's page of the run says who stopped it, after what its note said before.
        note, by = airflow_note(task["dag_id"], "manual__stop")
    assert answer.status_code == 202
    assert answer.json()["stopping_because"] == "stopped by alice"
    assert answer.json()["run"]["airflow_run_id"] == "manual__stop"
    assert answer.json()["noted_in_airflow"] is True
    assert note is not None and note.startswith("retrain of #12\n\n**Stopped by alice** at ")
    assert by == "alice"
    layout = RunLayout(get_settings().runs_dir, task["id"], run_key("manual__stop"))
    flag = RunAbortMarker(FolderRunFiles(layout)).flag()
    assert flag is not None and flag.by_user and flag.reason == "stopped by alice"
    assert flag.at  # when: the run's message says it once the run has stopped
    again = api.client.post(stop, headers=alice)  # the first stop holds: no second note
    assert again.status_code == 202 and again.json()["noted_in_airflow"] is False
    with default_catalog().session() as session:
        session.get(Run, run_id).state = RunState.STOPPED  # type: ignore[union-attr]
    ended = api.client.post(stop, headers=alice)
    assert ended.status_code == 409
    assert "has already ended (stopped)" in ended.json()["detail"]
    missing = api.client.post(f"/api/v1/tasks/{task['id']}/runs/999999/stop", headers=alice)
    assert missing.status_code == 404


def test_tasks_are_filtered_by_their_last_runs_status_and_an_unknown_one_is_refused(
    api: Api,
) -> None:
    alice = api.as_user("alice")
    ids = {}
    for name in ("status-ran", "status-new"):
        created = api.client.post("/api/v1/tasks", json=VALID_TASK | {"name": name}, headers=alice)
        ids[name] = created.json()["id"]
    with default_catalog().session() as session:
        for state in (RunState.SUCCESS, RunState.FAILED):  # the last one counts
            session.add(Run(task_id=ids["status-ran"], airflow_run_id=f"manual__{state}",
                            state=state, node_count=1))  # fmt: skip
            session.flush()

    def listed(status: str) -> set[str]:
        answer = api.client.get("/api/v1/tasks", params={"status": status}, headers=alice)
        assert answer.status_code == 200, answer.text
        return {task["name"] for task in answer.json()["tasks"]} & set(ids)

    assert (listed("failed"), listed("never"), listed("success")) == (
        {"status-ran"},
        {"status-new"},
        set(),
    )
    refused = api.client.get("/api/v1/tasks", params={"status": "bogus"}, headers=alice)
    assert refused.status_code == 400
    assert refused.json()["problems"] == [
        {
            "field": "status",
            "rule": "must be 'queued', 'running', 'success', 'failed', 'stopped', 'pruned' or "
            "'never', got 'bogus'",
        }
    ]


def test_resuming_a_run_needs_a_failed_or_stopped_one_with_a_checkpoint(
    api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = api.as_user("alice")
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": "resume-me"}, headers=alice
    ).json()
    plan = recorded(run_key="manual__lost-1", node_indices=["single-0"])
    with default_catalog().session() as session:
        earlier = Run(task_id=task["id"], airflow_run_id="manual__lost", state=RunState.RUNNING,
                      node_count=1, plan=plan)  # fmt: skip
        session.add(earlier)
        session.flush()
        run_id = earlier.id
    resume = f"/api/v1/tasks/{task['id']}/runs/{run_id}/resume"
    active = api.client.post(resume, headers=alice)
    assert active.status_code == 409
    assert active.json()["detail"] == (
        f"run {run_id} is running: only a failed or stopped run can be resumed"
    )
    with default_catalog().session() as session:
        session.get(Run, run_id).state = RunState.FAILED  # type: ignore[union-attr]
    bare = api.client.post(resume, headers=alice)
    assert bare.status_code == 409
    assert bare.json()["detail"] == (
        f"run {run_id} left no checkpoint: none of its nodes wrote to CHECKPOINT"
    )
    (tmp_path / "step-10.pt").write_bytes(b"weights")
    CheckpointSync(api.store, objects=RunObjects(task["id"], "manual__lost-1"),
                   run_id="manual__lost", node_index="single-0", folder=tmp_path,
                   every_seconds=0, note=lambda _: None).sync(final=True)  # fmt: skip
    triggered: list[dict[str, Any]] = []

    def trigger(*, dag_id: str, conf: dict[str, Any], **_: object) -> TriggeredRun:
        triggered.append(conf)
        return TriggeredRun(dag_id, "manual__resumed", "queued", conf, created=True)

    monkeypatch.setattr(task_routes, "trigger_dag_run", trigger)
    answer = api.client.post(resume, json={"conf": {"epochs": 7}}, headers=alice)
    assert answer.status_code == 201, answer.json()
    assert triggered == [{"epochs": 7, "resume_from": run_id}]
    assert answer.json()["run"]["resumed_from"] == run_id
    runs = api.client.get(f"/api/v1/tasks/{task['id']}/runs", headers=alice).json()["runs"]
    assert {run["airflow_run_id"]: run["resumed_from"] for run in runs} == {
        "manual__lost": None,
        "manual__resumed": run_id,
    }
    bob = api.as_user("bob")
    assert api.client.post(resume, headers=bob).status_code == 404  # not a member of demo


def test_a_secret_typed_for_one_run_is_held_apart_from_airflows_conf(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The conf Airflow stores and shows carries ``***``; the catalog's queued run holds the
    typed value for ``validate``; a trigger Airflow refuses leaves no run and no secret."""
    from octotrain.catalog.named_objects import Algorithms
    from tests.factories import ADMIN

    alice = api.as_user("alice")
    with default_catalog().session() as session:
        Algorithms(session, ADMIN, default_object_store()).create(
            "demo",
            {"name": "with-secrets", "image": "python:3.11", "command": ["python", "t.py"],
             "sample_type": "table", "env": {"API_TOKEN": "abc123"}},
        )  # fmt: skip
    document = VALID_TASK | {"name": "secretive", "algorithm": "with-secrets"}
    task = api.client.post("/api/v1/tasks", json=document, headers=alice).json()
    triggered: list[dict[str, Any]] = []

    def trigger(*, dag_id: str, conf: dict[str, Any], request_id: str, **_: object) -> TriggeredRun:
        triggered.append(conf)
        return TriggeredRun(dag_id, f"request__{request_id}", "queued", conf, created=True)

    monkeypatch.setattr(task_routes, "trigger_dag_run", trigger)
    runs = f"/api/v1/tasks/{task['id']}/runs"
    answer = api.client.post(runs, json={"conf": {"env": {"API_TOKEN": "typed"}}}, headers=alice)
    assert answer.status_code == 201, answer.json()
    assert triggered == [{"env": {"API_TOKEN": "***"}}]
    assert "typed" not in answer.text
    with default_catalog().session() as session:
        run = session.get(Run, answer.json()["run"]["id"])
        assert run is not None and run.airflow_run_id == answer.json()["dag_run_id"]
        assert run.secrets == {"env": {"API_TOKEN": "typed"}, "parameters": {}}

    def refused(**_: object) -> TriggeredRun:
        raise Conflict("Airflow has not parsed DAG x yet")

    monkeypatch.setattr(task_routes, "trigger_dag_run", refused)
    again = api.client.post(runs, json={"conf": {"env": {"API_TOKEN": "t2"}}}, headers=alice)
    assert again.status_code == 409
    with default_catalog().session() as session:
        assert len(session.scalars(select(Run).where(Run.task_id == task["id"])).all()) == 1


def test_lists_are_pages_with_their_total_as_airflows(api: Api) -> None:
    alice = api.as_user("alice")
    for number in range(3):
        made = api.client.post("/api/v1/tasks", json=VALID_TASK | {"name": f"page-{number}"},
                               headers=alice)  # fmt: skip
        assert made.status_code == 201, made.text
    everything = api.client.get("/api/v1/tasks", params={"limit": 1000}, headers=alice).json()
    window = {"limit": 2, "offset": 1, "order_by": "-id"}
    page = api.client.get("/api/v1/tasks", params=window, headers=alice).json()
    assert page["total_entries"] == everything["total_entries"] == len(everything["tasks"])
    newest_first = sorted((task["id"] for task in everything["tasks"]), reverse=True)
    assert [task["id"] for task in page["tasks"]] == newest_first[1:3]
    refused = api.client.get("/api/v1/tasks", params={"limit": 0}, headers=alice)
    assert refused.status_code == 400 and refused.json()["problems"][0]["field"] == "limit"
    bad_order = api.client.get("/api/v1/tasks", params={"order_by": "colour"}, headers=alice)
    assert bad_order.status_code == 400
    projects = api.client.get("/api/v1/projects", params={"limit": 1}, headers=alice).json()
    assert len(projects["projects"]) == 1 and projects["total_entries"] >= 1
