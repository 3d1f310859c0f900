"""A run's phase, percent and ETA over HTTP, per node and for the run; Airflow's login and
the project's membership required."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

from hooks.local.local_admission import machine_capacity
from hooks.runs.run_files import FolderRunFiles
from hooks.runs.run_progress import phase_sink
from hooks.storage.catalog import default_catalog
from octotrain.admission import Demand
from octotrain.catalog.admissions import request_admission, settle_admissions
from octotrain.catalog.models import Run, RunState
from octotrain.node_progress import Phase, PhaseRecord
from tests.plugins.api.conftest import Api
from tests.plugins.api.test_metrics_routes import new_run
from tests.stored_run_files import made


def test_each_node_and_the_run(api: Api) -> None:
    base, layout = new_run(api, "progress-shown")
    now = time.time()
    phase_sink(FolderRunFiles(layout), "distributed-0")(PhaseRecord(Phase.TRAINING, now, now))
    samples = [{"time": now - 18 + 2 * n, "current": 10 * n, "total": 1000} for n in range(10)]
    made(layout.progress_path("distributed-0")).write_text(
        "".join(json.dumps(sample) + "\n" for sample in samples)
    )
    answer = api.client.get(f"{base}/progress", headers=api.as_user("alice"))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["live"] is True and body["phase"] == "waiting"  # distributed-1 has no record
    assert (body["percent"], body["eta_seconds"]) == (None, None)
    first, second = body["nodes"]
    assert (first["node"], first["phase"], first["percent"]) == ("distributed-0", "training", 9.0)
    assert (first["current"], first["total"]) == (90.0, 1000.0)
    assert 170 < first["eta_seconds"] <= 182
    assert second == {
        "node": "distributed-1", "phase": "waiting", "since": None, "percent": None,
        "eta_seconds": None, "current": None, "total": None, "bytes_done": None,
        "bytes_total": None,
    }  # fmt: skip
    phase_sink(FolderRunFiles(layout), "distributed-1")(PhaseRecord(Phase.TRAINING, now, now))
    made(layout.progress_path("distributed-1")).write_text(
        "".join(
            json.dumps(sample | {"current": sample["current"] / 2}) + "\n" for sample in samples
        )
    )
    body = api.client.get(f"{base}/progress", headers=api.as_user("alice")).json()
    assert (body["phase"], body["percent"]) == ("training", 4.5)
    assert body["eta_seconds"] == max(node["eta_seconds"] for node in body["nodes"])


def test_other_projects_runs_are_not_found(api: Api) -> None:
    base, _ = new_run(api, "progress-private")
    assert api.client.get(f"{base}/progress", headers=api.as_user("bob")).status_code == 404
    assert api.client.get(f"{base}/progress").status_code == 401


def _claim(run_id: int, *, cores: float, at: datetime) -> None:
    with default_catalog().session() as session:
        request_admission(session, run_id=run_id, project="demo", priority=0,
                          demand=Demand(2, cores, 1024), now=at)  # fmt: skip
        settle_admissions(session, machine_capacity(), now=at)


def test_a_waiting_run_s_queue_position_ask_and_reason_then_how_long_it_waited(api: Api) -> None:
    """The local launcher's admission (the tests' machine counts 64 cores)."""
    holding, _ = new_run(api, "queue-holding")
    waiting, _ = new_run(api, "queue-waiting")
    started = datetime.now(UTC) - timedelta(seconds=90)
    _claim(int(holding.rsplit("/", 1)[1]), cores=40, at=started)
    _claim(int(waiting.rsplit("/", 1)[1]), cores=40, at=started)
    body = api.client.get(f"{waiting}/progress", headers=api.as_user("alice")).json()
    admission = body["admission"]
    assert admission["queue"] == "local" and admission["position"] == 1
    assert admission["asked"] == "2 nodes, 40 cores, 1 GiB of memory"
    assert admission["reason"] == (
        "waiting for this machine: 24 of 64 cores free, the run needs 40 cores"
    )
    assert admission["admitted_at"] is None and 89 < admission["waited_seconds"] < 120
    assert admission["in_words"].startswith("waiting 1 min ")
    assert admission["in_words"].endswith(", position 1: " + admission["reason"])
    with default_catalog().session() as session:
        run = session.get(Run, int(holding.rsplit("/", 1)[1]))
        assert run is not None
        run.state = RunState.SUCCESS
    with default_catalog().session() as session:
        settle_admissions(session, machine_capacity(), now=started + timedelta(seconds=60))
    admission = api.client.get(f"{waiting}/progress", headers=api.as_user("alice")).json()[
        "admission"
    ]
    assert (admission["position"], admission["reason"], admission["waited_seconds"]) == (
        None, "", 60.0
    )  # fmt: skip
    assert admission["in_words"] == "admitted by queue local after waiting 1 min 0 s"
    held = api.client.get(f"{holding}/progress", headers=api.as_user("alice")).json()
    assert held["admission"]["waited_seconds"] == 0.0
