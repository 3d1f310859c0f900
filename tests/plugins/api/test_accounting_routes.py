"""Usage accounting over REST: a project's month per task, a task's runs, one run; a bad month
or an unknown project refused naming it, another project's usage not disclosed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from octotrain.catalog.node_holds import record_hold
from octotrain.tasks import Tasks
from tests.factories import ADMIN, VALID_TASK
from tests.plan_rows import recorded
from tests.plugins.api.conftest import Api, auth

API = "/api/v1"
TRIGGERED = datetime(2026, 10, 5, 10, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


@pytest.fixture(scope="module")
def billed(api: Api) -> tuple[int, int]:
    """A task of project demo with one two-node run in October 2026: queued for half an hour,
    each node holding 4 CPUs and 1 GPU for 1.5 hours."""
    with default_catalog().session() as session:
        task = Tasks(session, ADMIN).create(VALID_TASK | {"name": "billed"})
        resources = {"spec": "gpu", "kind": "cce", "cpu": 4.0, "memory_mib": 512, "gpu_count": 1}
        run = Run(
            task_id=task.id, airflow_run_id="manual__billed", state=RunState.SUCCESS,
            node_count=2, plan=recorded(resources=resources), started_at=TRIGGERED,
            ended_at=TRIGGERED + 3 * HOUR,
        )  # fmt: skip
        session.add(run)
        session.flush()
        for node in ("distributed-0", "distributed-1"):
            record_hold(
                session, run_id=run.id, node_index=node,
                started_at=TRIGGERED + HOUR / 2, ended_at=TRIGGERED + 2 * HOUR,
            )  # fmt: skip
        return task.id, run.id


def test_a_project_s_month_has_its_totals_and_a_row_per_task(
    api: Api, billed: tuple[int, int]
) -> None:
    answer = api.client.get(f"{API}/projects/demo/usage?month=2026-10", headers=auth("alice"))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["project"], body["month"]) == ("demo", "2026-10")
    assert body["total"] == {"node_hours": 3.0, "cpu_hours": 12.0, "gpu_hours": 3.0,
                             "queued_hours": 0.5, "training_hours": 1.5}  # fmt: skip
    assert [(row["task_name"], row["runs"]) for row in body["tasks"]] == [("billed", 1)]
    november = api.client.get(f"{API}/projects/demo/usage?month=2026-11", headers=auth("alice"))
    assert november.json()["tasks"] == []


def test_a_task_s_runs_and_one_run(api: Api, billed: tuple[int, int]) -> None:
    task_id, run_id = billed
    runs = api.client.get(f"{API}/tasks/{task_id}/usage", headers=auth("alice")).json()
    assert runs["month"] is None
    [row] = runs["runs"]
    assert (row["run_id"], row["nodes_recorded"], row["gpu_count"]) == (run_id, 2, 1)
    one = api.client.get(f"{API}/tasks/{task_id}/runs/{run_id}/usage", headers=auth("alice"))
    assert one.json()["usage"] == row["usage"]


@pytest.mark.parametrize("month", ["2026-13", "10-2026", "2026-1"])
def test_a_bad_month_is_refused_naming_the_field(api: Api, month: str) -> None:
    answer = api.client.get(f"{API}/projects/demo/usage?month={month}", headers=auth("alice"))
    assert answer.status_code == 400
    [problem] = answer.json()["problems"]
    assert problem["field"] == "month" and "YYYY-MM" in problem["rule"]


def test_an_unknown_or_hidden_project_is_not_found(api: Api, billed: tuple[int, int]) -> None:
    unknown = api.client.get(f"{API}/projects/nope/usage", headers=auth("alice"))
    assert (unknown.status_code, unknown.json()["detail"]) == (404, "project 'nope' not found")
    hidden = api.client.get(f"{API}/projects/demo/usage?month=2026-10", headers=auth("bob"))
    assert hidden.status_code == 404
    task = api.client.get(f"{API}/tasks/{billed[0]}/usage", headers=auth("bob"))
    assert task.status_code == 404
    assert api.client.get(f"{API}/projects/demo/usage").status_code == 401


def test_usage_rows_are_paged_and_the_total_counts_them_all(
    api: Api, billed: tuple[int, int]
) -> None:
    task_id, _ = billed
    past = api.client.get(f"{API}/tasks/{task_id}/usage?offset=1", headers=auth("alice")).json()
    assert (past["runs"], past["total_entries"], past["total"]["node_hours"]) == ([], 1, 3.0)
    project = api.client.get(
        f"{API}/projects/demo/usage?month=2026-10&limit=1", headers=auth("alice")
    ).json()
    assert (len(project["tasks"]), project["total_entries"]) == (1, 1)
    refused = api.client.get(f"{API}/tasks/{task_id}/usage?limit=0", headers=auth("alice"))
    assert refused.status_code == 400 and refused.json()["problems"][0]["field"] == "limit"
