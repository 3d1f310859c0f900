"""A sweep on the real Airflow of the console's tests (scheduler, LocalExecutor, local launcher):
created and started as the console does, through the plugin's REST API; the sweeps' DAG starts
its trials as ordinary runs of the task, one is pruned (its nodes stopped, its run ``pruned``,
its usage counted), and the best trial's model version is marked as the sweep's result. Its
driver's worker process is killed while the first trial trains: Airflow tries the task again
and the new driver carries on, starting no trial twice and losing none."""

from __future__ import annotations

import os
import signal
from typing import Any

import httpx
import psutil

from octotrain.contracts import SWEEPS_DAG_ID, dag_id_for
from tests.factories import VALID_TASK
from tests.live_airflow import HTTP_SECONDS, LiveAirflow

# Prints ``step=N loss=X`` each second for 6 steps: loss = f(lr) / step, with f(0.2) = 1 the
# best, f(0.3) = 2 and f(0.001) = 100 (hopeless); writes a model.
TOY_TRAINING = (
    "import os, sys, time\n"
    "lr = float(sys.argv[1].split('=')[1])\n"
    "scale = {0.3: 2.0, 0.2: 1.0}.get(lr, 100.0)\n"
    "for step in range(1, 7):\n"
    "    print(f'step={step} loss={scale / step}', flush=True)\n"
    "    time.sleep(1)\n"
    "open(os.environ['OUTPUT'] + '/model.txt', 'w').write(str(lr))\n"
)
TOY_ALGORITHM = {
    "name": "sweep-toy",
    "algorithm_type": "custom_script",
    "image": "python:3.11-slim",
    "command": ["python", "-c", TOY_TRAINING],
    "sample_type": "table",
    "parameters": [{"name": "lr", "type": "float", "default": 0.1, "min": 0.0, "max": 1.0}],
    "metric_definitions": [
        {"name": "loss", "regex": "step=(?P<step>\\d+) loss=(?P<loss>[0-9.e+-]+)"}
    ],
}
# The grid's order with seed 5 is 0.3, 0.2, 0.001: the third is pruned against the median of the
# two finished ones once it has reported 2 steps.
SWEEP = {
    "name": "toy-grid",
    "parameters": {"lr": {"type": "choice", "choices": [0.3, 0.2, 0.001]}},
    "objective": {"chart": "loss", "series": "loss", "direction": "minimize"},
    "search": {"sampler": "grid", "seed": 5},
    "budget": {"trials": 3},
    "concurrency": 1,
    "early_stopping": {"pruner": "median", "min_steps": 2, "startup_trials": 1},
}


def test_a_sweep_runs_its_trials_prunes_the_hopeless_one_and_marks_the_best(
    airflow: LiveAirflow,
) -> None:
    api = httpx.Client(
        base_url=f"{airflow.url}/octotrain/api/v1",
        headers=airflow.admin_headers(),
        timeout=HTTP_SECONDS,
    )
    made = api.post("/projects/demo/algorithms", json=TOY_ALGORITHM)
    assert made.status_code == 201, made.text
    task = api.post(
        "/tasks",
        json=VALID_TASK
        | {
            "name": "sweep-toy-task",
            "algorithm": "sweep-toy",
            "node_count": 1,
            "parameters": {"lr": 0.1},
        },
    )
    assert task.status_code == 201, task.text
    task_id = task.json()["id"]
    refused = api.post(f"/tasks/{task_id}/sweeps", json=SWEEP | {"concurrency": 0})
    assert refused.status_code == 422, refused.text
    assert "concurrency" in refused.text
    airflow.wait_until(
        "Airflow to parse the task's DAG",
        lambda: (
            httpx.get(
                f"{airflow.url}/api/v2/dags/{dag_id_for(task_id)}",
                headers=api.headers,
                timeout=HTTP_SECONDS,
            ).status_code
            == 200
        ),
    )
    started = api.post(f"/tasks/{task_id}/sweeps", params={"start": "true"}, json=SWEEP)
    assert started.status_code == 201, started.text
    sweep_id = started.json()["id"]
    assert started.json()["state"] == "running"
    airflow.wait_until(
        "the first trial to train",
        lambda: any(
            t["state"] == "running" for t in api.get(f"/sweeps/{sweep_id}").json()["trials"]
        ),
    )
    sweep_run = started.json()["airflow_run_id"]
    driver = f"/dags/{SWEEPS_DAG_ID}/dagRuns/{sweep_run}/taskInstances/drive_sweep"
    killed = kill_worker_of(airflow, driver)

    def ended() -> dict | None:
        sweep = api.get(f"/sweeps/{sweep_id}").json()
        return sweep if sweep["state"] not in ("created", "running", "stopping") else None

    sweep = airflow.wait_until("the sweep to end", ended)
    assert sweep["state"] == "finished", sweep["message"]
    trials = sweep["trials"]
    assert [t["parameters"]["lr"] for t in trials] == [0.3, 0.2, 0.001]
    assert [t["state"] for t in trials] == ["success", "success", "pruned"]
    pruned = trials[2]
    assert pruned["message"].startswith("Pruned by sweep toy-grid (trial 2, at step")
    assert pruned["node_hours"] > 0  # its nodes' hold was counted, and released
    assert sweep["best"]["trial"] == 1 and sweep["best"]["objective"] == 1.0 / 6
    assert sweep["message"].startswith("Finished: all 3 trials were run; best: trial 1")
    runs = api.get(f"/tasks/{task_id}/runs").json()["runs"]
    assert sorted((run["sweep"], run["trial"]) for run in runs) == [(sweep_id, n) for n in range(3)]
    tries = airflow.wait_until(
        "the driver's task to end", lambda: (ti := airflow_get(airflow, driver))["end_date"] and ti
    )
    assert (tries["try_number"], tries["state"]) == (2, "success"), killed
    version = sweep["best"]["model_version"]
    lineage = api.get(f"/projects/demo/model-repositories/house-price-model/versions/{version}")
    assert lineage.json()["lineage"]["sweep"]["trial"] == 1, lineage.text


def airflow_get(airflow: LiveAirflow, path: str) -> Any:
    answer = httpx.get(
        f"{airflow.url}/api/v2{path}", headers=airflow.admin_headers(), timeout=HTTP_SECONDS
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def kill_worker_of(airflow: LiveAirflow, task_instance: str) -> int:
    """SIGKILL the process running the task instance (its title names its id, as Airflow's
    task runner sets it), as a worker dies; its pid."""
    ti_id = airflow_get(airflow, task_instance)["id"]
    found = [
        process
        for process in psutil.process_iter(["pid", "cmdline"])
        if f"airflow worker -- {ti_id}" in " ".join(process.info["cmdline"] or [])
    ]
    assert len(found) == 1, f"no single process runs {ti_id}: {found}"
    os.kill(found[0].pid, signal.SIGKILL)
    return found[0].pid
