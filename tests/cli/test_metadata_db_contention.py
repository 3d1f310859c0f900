"""Concurrent triggers through Octotrain's Airflow client against a real api-server on the
embedded default's SQLite metadata DB: each is answered, none twice, and the api-server keeps
answering meanwhile.

Before ``cli.airflow_sqlite`` bounded the event loop's wait, a burst like this one froze the
api-server for the whole busy timeout: Airflow's action log of one trigger waited on the event
loop for the write lock of another trigger, whose commit was due on that same loop, and ended
with "database is locked" (a 500), as did the triggers queued behind it."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from cli.airflow_sqlite import BUSY_TIMEOUT_SECONDS
from hooks.airflow.airflow_rest import AirflowApiError, AirflowRestClient
from octotrain.contracts import dag_id_for
from tests.live_airflow import HTTP_SECONDS, LiveAirflow, demo_airflow

TRIGGERS_AT_ONCE = 16
ROUNDS = 3
# Far below the busy timeout, which a frozen api-server made every answer wait for, and far
# above what a loaded 2-core machine needs for an answer of a free one.
STALL_SECONDS = BUSY_TIMEOUT_SECONDS / 2
PROBE_EVERY_SECONDS = 0.5


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveAirflow]:
    root = tmp_path_factory.mktemp("contention")
    with demo_airflow(root, {"OCTOTRAIN_STATE_DIR": str(root / "state")}) as (server, _):
        yield server


class HealthProbe:
    """Asks the api-server for its health over and over in a thread; keeps the longest wait."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.longest = 0.0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=STALL_SECONDS) as http:
            while not self.stopped.wait(PROBE_EVERY_SECONDS):
                started = time.monotonic()
                with contextlib.suppress(httpx.TimeoutException):
                    http.get("/api/v2/monitor/health")
                self.longest = max(self.longest, time.monotonic() - started)

    def __enter__(self) -> HealthProbe:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        self.thread.join(STALL_SECONDS * 2)


def timed_trigger(client: AirflowRestClient, dag_id: str) -> tuple[str, float]:
    started = time.monotonic()
    try:
        run_id = client.trigger(dag_id)
    except AirflowApiError as error:
        run_id = f"failed: {error}"
    return run_id, time.monotonic() - started


def test_concurrent_triggers_each_start_one_run_and_never_freeze_the_api_server(
    airflow: LiveAirflow,
) -> None:
    dag_id = dag_id_for(1)
    client = AirflowRestClient(airflow.url, timeout=STALL_SECONDS)
    client.login("admin", airflow.password)
    client.unpause(dag_id)
    started: list[str] = []
    with HealthProbe(airflow.url) as probe, ThreadPoolExecutor(TRIGGERS_AT_ONCE) as pool:
        for _ in range(ROUNDS):
            answers = list(pool.map(lambda _: timed_trigger(client, dag_id),
                                    range(TRIGGERS_AT_ONCE)))  # fmt: skip
            failed = [run_id for run_id, _ in answers if run_id.startswith("failed")]
            assert not failed, failed[:2]
            slowest = max(seconds for _, seconds in answers)
            assert slowest < STALL_SECONDS, f"a trigger took {slowest:.0f}s"
            started += [run_id for run_id, _ in answers]
    assert probe.longest < STALL_SECONDS, f"the api-server froze for {probe.longest:.0f}s"
    listed = httpx.get(
        f"{airflow.url}/api/v2/dags/{dag_id}/dagRuns",
        params={"limit": 2 * ROUNDS * TRIGGERS_AT_ONCE},
        headers=airflow.admin_headers(),
        timeout=HTTP_SECONDS,
    ).json()
    assert sorted(run["dag_run_id"] for run in listed["dag_runs"]) == sorted(set(started))
    assert len(started) == ROUNDS * TRIGGERS_AT_ONCE
