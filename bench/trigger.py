"""Trigger-to-first-node latency and platform overhead of a 10-second training on the local
launcher, against a bare Airflow DAG that runs the same command in one BashOperator, both in
the same Airflow (api-server, scheduler with the LocalExecutor, SQLite) started for the run.

    uv run python -m bench.trigger [--runs 3]

- latency: from just before the trigger request to the moment the training command starts
  (it writes its own start time);
- overhead: the run's end (Airflow's ``end_date``) minus the trigger, minus the 10 s the
  command takes.

Octotrain's run goes through ``validate``, ``stage_data``, ``launch`` (one node),
``collect_logs`` and ``archive_model``; the bare DAG is one task. The ratio says what those
stages cost in Airflow task starts.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx
from sqlalchemy import select

from hooks.storage.catalog import CatalogHook
from octotrain.catalog.models import Algorithm
from octotrain.settings import REPO_ROOT
from tests.factories import add_command_algorithm, add_task
from tests.live_airflow import HTTP_SECONDS, demo_airflow

TRAINING_SECONDS = 10
# Writes its start (wall clock) as one JSON line, trains for TRAINING_SECONDS, then writes its
# model (where Octotrain gives it an OUTPUT folder).
TRAINING = (
    "import json, os, time\n"
    "started = time.time()\n"
    "with open(os.environ['BENCH_MARKS'], 'a') as marks:\n"
    "    line = {'run': os.environ.get('RUN_ID', ''), 'started': started}\n"
    "    marks.write(json.dumps(line) + '\\n')\n"
    f"time.sleep({TRAINING_SECONDS})\n"
    "if os.environ.get('OUTPUT'):\n"
    "    open(os.path.join(os.environ['OUTPUT'], 'model.txt'), 'w').write('trained')\n"
)
BARE_DAG = """
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG

with DAG(dag_id="bare_bash", schedule=None, catchup=False, is_paused_upon_creation=False):
    BashOperator(
        task_id="train",
        bash_command={command!r},
        env={{"BENCH_MARKS": {marks!r}}},
        append_env=True,
    )
"""


def _marks(path: Path) -> dict[str, float]:
    if not path.exists():
        return {}
    lines = [json.loads(line) for line in path.read_text().splitlines() if line]
    return {line["run"]: line["started"] for line in lines}


def _wait(http: httpx.Client, dag_id: str, run_id: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = http.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}").json()
        if run["state"] in ("success", "failed"):
            return dict(run)
        time.sleep(0.25)
    raise TimeoutError(f"{dag_id} run {run_id} did not end in {timeout}s")


def _moment(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def _task_times(http: httpx.Client, dag_id: str, run_id: str) -> dict[str, tuple[float, float]]:
    """Where a run's time went, per task: from the end of the task before it (or the run's
    start) to its own start (scheduling and the task process's start), and its own run."""
    run = http.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}").json()
    instances = http.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances").json()
    previous_end = _moment(run["start_date"])
    times = {}
    for ti in sorted(instances["task_instances"], key=lambda ti: ti["start_date"] or ""):
        start, end = _moment(ti["start_date"]), _moment(ti["end_date"])
        times[ti["task_id"]] = (start - previous_end, end - start)
        previous_end = max(previous_end, end)
    return times


def _measure(
    http: httpx.Client, marks: Path, dag_id: str, path: str, body: dict
) -> tuple[float, float, dict[str, tuple[float, float]]]:
    started = time.time()
    answer = http.post(path, json=body)
    answer.raise_for_status()
    run_id = answer.json()["dag_run_id"]
    run = _wait(http, dag_id, run_id)
    if run["state"] != "success":
        raise RuntimeError(f"{dag_id} run {run_id} {run['state']}")
    ended = _moment(run["end_date"])
    node_started = _marks(marks)[run_id]
    tasks = _task_times(http, dag_id, run_id)
    return node_started - started, ended - started - TRAINING_SECONDS, tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="octotrain-bench-trigger-"))
    marks = root / "marks.jsonl"
    dags = root / "dags"
    dags.mkdir()
    (dags / "training_tasks.py").write_text((REPO_ROOT / "dags/training_tasks.py").read_text())
    command = "RUN_ID={{ run_id }} python -c " + shlex.quote(TRAINING)
    (dags / "bare_bash.py").write_text(BARE_DAG.format(command=command, marks=str(marks)))

    def ten_seconds_task(catalog: CatalogHook, _store: object, _demo: object) -> int:
        add_command_algorithm(catalog, "ten-seconds", TRAINING)
        with catalog.session() as session:
            algorithm = session.scalars(select(Algorithm).where(Algorithm.name == "ten-seconds"))
            algorithm.one().env = {"BENCH_MARKS": str(marks)}
        return add_task(catalog, name="ten-seconds", algorithm="ten-seconds", parameters={},
                        node_count=1)  # fmt: skip

    settings = {"OCTOTRAIN_STATE_DIR": str(root / "state")}
    with demo_airflow(
        root, settings, ten_seconds_task, components=("scheduler",), dags_folder=dags
    ) as (server, task_id):
        headers = server.admin_headers()
        with httpx.Client(base_url=server.url, headers=headers, timeout=HTTP_SECONDS) as http:
            results: dict[str, list[tuple[float, float, dict[str, tuple[float, float]]]]]
            results = {"bare": [], "octotrain": []}
            for _ in range(arguments.runs):
                results["bare"].append(_measure(http, marks, "bare_bash",
                    "/api/v2/dags/bare_bash/dagRuns", {"logical_date": None}))  # fmt: skip
                results["octotrain"].append(_measure(http, marks, f"octotrain_task_{task_id}",
                    f"/octotrain/api/v1/tasks/{task_id}/runs", {}))  # fmt: skip
    print(f"{arguments.runs} runs each of a {TRAINING_SECONDS} s training, median (min-max):")
    medians = {}
    for name, samples in results.items():
        latency = [sample[0] for sample in samples]
        overhead = [sample[1] for sample in samples]
        medians[name] = (statistics.median(latency), statistics.median(overhead))
        print(f"  {name:9}  trigger→first node {medians[name][0]:6.2f} s "
              f"({min(latency):.2f}-{max(latency):.2f})   overhead {medians[name][1]:6.2f} s "
              f"({min(overhead):.2f}-{max(overhead):.2f})")  # fmt: skip
    print(f"  ratio      trigger→first node {medians['octotrain'][0] / medians['bare'][0]:.2f}x"
          f"   overhead {medians['octotrain'][1] / medians['bare'][1]:.2f}x")  # fmt: skip
    for name, samples in results.items():
        print(f"  where {name}'s time goes, median per task: wait before it / its own run")
        for task in samples[0][2]:
            waits = statistics.median(sample[2][task][0] for sample in samples)
            runs = statistics.median(sample[2][task][1] for sample in samples)
            print(f"    {task:14} {waits:6.2f} s / {runs:6.2f} s")


if __name__ == "__main__":
    main()
