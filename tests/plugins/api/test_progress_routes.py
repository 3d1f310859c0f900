"""A run's phase, percent and ETA over HTTP, per node and for the run; Airflow's login and
the project's membership required."""

from __future__ import annotations

import json
import time

from hooks.run_progress import phase_file_sink
from octotrain.node_progress import Phase, PhaseRecord
from tests.plugins.api.conftest import Api
from tests.plugins.api.test_metrics_routes import new_run


def test_each_node_and_the_run(api: Api) -> None:
    base, layout = new_run(api, "progress-shown")
    now = time.time()
    phase_file_sink(layout.phase_path("distributed-0"))(PhaseRecord(Phase.TRAINING, now, now))
    samples = [{"time": now - 18 + 2 * n, "current": 10 * n, "total": 1000} for n in range(10)]
    layout.progress_path("distributed-0").write_text(
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
    phase_file_sink(layout.phase_path("distributed-1"))(PhaseRecord(Phase.TRAINING, now, now))
    layout.progress_path("distributed-1").write_text(
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
