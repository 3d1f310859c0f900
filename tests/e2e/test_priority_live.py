"""Priority decides who runs first when pool slots are scarce: with a real scheduler (the
LocalExecutor) and Airflow's default pool closed, a low-priority run is triggered before a
high-priority one; once one slot opens, the high-priority task's ``validate`` takes it and the
low-priority one waits. Task priority [-50, 50] is Airflow's ``priority_weight`` [1, 101]."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from hooks.catalog import CatalogHook
from octotrain.contracts import dag_id_for
from tests.factories import add_task
from tests.live_airflow import LiveAirflow, demo_airflow


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveAirflow, dict]]:
    root = tmp_path_factory.mktemp("priority")

    def two_tasks(catalog: CatalogHook, _store: object, _demo: object) -> dict[str, int]:
        return {
            "low": add_task(catalog, name="low", priority=-50, node_count=1),
            "high": add_task(catalog, name="high", priority=50, node_count=1),
        }

    settings = {"OCTOTRAIN_STATE_DIR": str(root / "state")}
    with demo_airflow(root, settings, two_tasks, components=("scheduler",)) as (server, tasks):
        yield server, tasks


def wait_for(what: str, check, timeout: float = 90) -> object:
    deadline = time.monotonic() + timeout
    while (result := check()) is None or result is False:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)
    return result


def test_the_higher_priority_run_takes_the_scarce_slot_first(
    airflow: tuple[LiveAirflow, dict],
) -> None:
    server, tasks = airflow
    login = httpx.post(
        f"{server.url}/auth/token", json={"username": "admin", "password": server.password}
    )
    headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
    http = httpx.Client(base_url=f"{server.url}/api/v2", headers=headers, timeout=30)

    def open_slots(slots: int) -> None:
        answer = http.patch(
            "/pools/default_pool", params={"update_mask": "slots"}, json={"slots": slots}
        )
        assert answer.is_success, answer.text

    open_slots(0)
    runs = {}
    for name in ("low", "high"):  # the low-priority run is triggered first
        answer = http.post(f"/dags/{dag_id_for(tasks[name])}/dagRuns", json={"logical_date": None})
        assert answer.status_code == 200, answer.text
        runs[name] = answer.json()["dag_run_id"]

    def validate(name: str) -> dict:
        path = f"/dags/{dag_id_for(tasks[name])}/dagRuns/{runs[name]}/taskInstances/validate"
        return http.get(path).json()

    wait_for("both validates to wait for a slot",
             lambda: all(validate(name)["state"] == "scheduled" for name in runs))  # fmt: skip
    assert validate("high")["priority_weight"] == 101 and validate("low")["priority_weight"] == 1
    open_slots(1)
    wait_for("the high-priority validate to finish", lambda: validate("high")["state"] == "success")
    assert validate("low")["state"] == "scheduled"  # still waiting: high went first
    open_slots(8)
    wait_for("the low-priority validate to run", lambda: validate("low")["start_date"])
    assert validate("high")["start_date"] < validate("low")["start_date"]
