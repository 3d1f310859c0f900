"""Priority decides who runs first when pool slots are scarce: with a real scheduler (the
LocalExecutor) and Airflow's default pool closed, a low-priority run is triggered before a
high-priority one; once one slot opens, the high-priority task's ``validate`` takes it and the
low-priority one waits. Task priority [-50, 50] is Airflow's ``priority_weight`` [1, 101]."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest

from hooks.storage.catalog import CatalogHook
from octotrain.contracts import dag_id_for
from tests.factories import add_task
from tests.live_airflow import HTTP_SECONDS, LiveAirflow, demo_airflow


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


def test_the_higher_priority_run_takes_the_scarce_slot_first(
    airflow: tuple[LiveAirflow, dict],
) -> None:
    server, tasks = airflow
    http = httpx.Client(
        base_url=f"{server.url}/api/v2", headers=server.admin_headers(), timeout=HTTP_SECONDS
    )

    def patch(path: str, **request: object) -> None:
        """A PATCH, repeated while Airflow answers that its SQLite metadata DB was locked: its
        action log writes on the api-server's event loop, which must not wait for the lock (as
        Octotrain's own client, ``hooks.airflow.airflow_rest``, repeats it)."""

        def answered() -> bool:
            answer = http.patch(path, **request)  # type: ignore[arg-type]
            if answer.status_code == 500 and "Database error" in answer.text:
                return False
            assert answer.is_success, answer.text
            return True

        server.wait_until(f"Airflow to take PATCH {path}", answered, timeout=HTTP_SECONDS)

    def open_slots(slots: int) -> None:
        patch("/pools/default_pool", params={"update_mask": "slots"}, json={"slots": slots})

    # Octotrain's own DAGs (the data caches' every minute, the daily orphan sweep) are paused and
    # their tasks let end first: the scenario counts slots, and on SQLite their task starts
    # colliding with its triggers held the metadata DB's write lock for the busy timeout.
    for dag_id in ("octotrain_data_caches", "octotrain_orphan_objects"):
        patch(f"/dags/{dag_id}", json={"is_paused": True})

    def no_task_running() -> bool:
        answer = http.get(
            "/dags/~/dagRuns/~/taskInstances", params={"state": ["queued", "running"]}
        )
        assert answer.is_success, answer.text
        return answer.json()["total_entries"] == 0

    server.wait_until("Octotrain's own DAGs' tasks to end", no_task_running)
    open_slots(0)
    runs = {}
    for name in ("low", "high"):  # the low-priority run is triggered first
        answer = http.post(f"/dags/{dag_id_for(tasks[name])}/dagRuns", json={"logical_date": None})
        assert answer.status_code == 200, answer.text
        runs[name] = answer.json()["dag_run_id"]

    def validate(name: str) -> dict:
        path = f"/dags/{dag_id_for(tasks[name])}/dagRuns/{runs[name]}/taskInstances/validate"
        answer = http.get(path)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def waiting() -> bool:
        return all(validate(name)["state"] == "scheduled" for name in runs)

    def ended(name: str) -> dict | None:
        return ti if (ti := validate(name))["state"] == "success" else None

    def started(name: str) -> dict | None:
        return ti if (ti := validate(name))["start_date"] else None

    server.wait_until("both validates to wait for a slot", waiting)
    assert validate("high")["priority_weight"] == 101 and validate("low")["priority_weight"] == 1
    open_slots(1)
    high = server.wait_until("the high-priority validate to finish", lambda: ended("high"))
    open_slots(8)
    low = server.wait_until("the low-priority validate to start", lambda: started("low"))
    # One slot: the low-priority validate could only start once the high-priority one had
    # ended (whatever took the slot next, the scheduler may have chosen differently since).
    assert moment(high["end_date"]) <= moment(low["start_date"]), (high, low)


def moment(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp)
