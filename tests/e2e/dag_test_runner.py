"""Run training-task DAGs through Airflow's ``dag.test()`` in a process of their own.

Called by tests/e2e/test_training_run.py with AIRFLOW_HOME, Airflow's metadata DB and the
OCTOTRAIN_* settings in the environment; prints one JSON line per scenario.

``dag.test()`` runs the task instances one at a time in this process, and their logs go to its
stdout, each between the lines ``[DAG TEST] starting task_id=…`` and ``[DAG TEST] end task …``,
before the scenario's ``RESULT`` line: ``task_logs`` reads them from there.
"""

from __future__ import annotations

import json
import re
import sys

from airflow.models.dagrun import DagRun
from airflow.utils.session import create_session
from sqlalchemy import select

from dags.factory import build_all_dags
from hooks.airflow.dag_runs import add_run_note
from hooks.run_stops import request_stop
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.models import Run, TrainingTask
from octotrain.contracts import dag_id_for
from tests.factories import add_command_algorithm, add_task, seed

_TASK_STARTS = re.compile(r"\[DAG TEST\] starting task_id=(\S+) map_index=(-?\d+)")
_TASK_ENDS = re.compile(r"\[DAG TEST\] end task task_id=(\S+) map_index=(-?\d+)")

# The first node to start fails with exit code 3; any other keeps training until stopped.
# (Which node starts first is up to the executor, so the node that fails is picked at run time.)
FIRST_NODE_FAILS = (
    "import os, sys, time\n"
    "print('node', os.environ['NODE_INDEX'], 'starting', flush=True)\n"
    "claim = os.path.join(os.environ['METRICS'], os.pardir, os.pardir, 'first-node')\n"
    "try:\n"
    "    os.close(os.open(claim, os.O_CREAT | os.O_EXCL))\n"
    "except FileExistsError:\n"
    "    time.sleep(30)\n"
    "else:\n"
    "    sys.exit(3)\n"
)

# Rank 0 saves a checkpoint and is lost (exit 3) unless it finds one; rank 1 trains from
# scratch (in the first run it never starts: rank 0's failure stops the run first).
LOST_ONCE = (
    "import os, pathlib, sys\n"
    "folder = pathlib.Path(os.environ['CHECKPOINT'])\n"
    "saved = sorted(folder.glob('step-*.pt'))\n"
    "output = pathlib.Path(os.environ['OUTPUT'], 'rank-' + os.environ['RANK'] + '.txt')\n"
    "if saved:\n"
    "    print('resumed from', saved[-1].name, flush=True)\n"
    "    output.write_text('trained on from ' + saved[-1].read_text())\n"
    "elif os.environ['RANK'] == '0':\n"
    "    (folder / 'step-50.pt.tmp').write_text('step 50')\n"
    "    os.replace(folder / 'step-50.pt.tmp', folder / 'step-50.pt')\n"
    "    print('saved step-50.pt; the node is lost', flush=True)\n"
    "    sys.exit(3)\n"
    "else:\n"
    "    output.write_text('trained from scratch')\n"
)


def setup() -> dict[str, int]:
    catalog = default_catalog()
    catalog.migrate()
    demo = seed(catalog, default_object_store())
    add_command_algorithm(catalog, "first-node-fails", FIRST_NODE_FAILS)
    failing = add_task(catalog, name="node-fails", algorithm="first-node-fails", parameters={})
    add_command_algorithm(catalog, "lost-once", LOST_ONCE)
    resumed = add_task(catalog, name="resumed", algorithm="lost-once", parameters={})
    missing = add_task(catalog, name="missing-refs")
    with catalog.session() as session:
        # References that disappear after the task was saved (renamed, deleted elsewhere).
        task = session.get(TrainingTask, missing)
        task.spec = task.spec | {
            "algorithm": "deleted-algorithm",
            "model_repository": "deleted-repository",
            "data_inputs": [{"dataset": "house-prices", "version": "v404"}],
        }
    return {
        "demo": demo.task_id,
        "node-fails": failing,
        "missing-refs": missing,
        "resumed": resumed,
    }


def run(task_id: int, conf: dict[str, object] | None = None) -> dict[str, object]:
    dag = build_all_dags()[dag_id_for(task_id)]
    dag_run = dag.test(logical_date=None, run_conf=conf)
    states = {}
    for ti in dag_run.get_task_instances():
        label = ti.task_id if ti.map_index < 0 else f"{ti.task_id}[{ti.map_index}]"
        states[label] = str(ti.state)
    with default_catalog().session() as session:
        run_row = session.scalars(
            select(Run).where(Run.task_id == task_id, Run.airflow_run_id == dag_run.run_id)
        ).one_or_none()
        catalog_run = (
            {
                "id": run_row.id,
                "resumed_from": run_row.resumed_from_id,
                "lineage_resumed_from": run_row.model_version.lineage.get("resumed_from")
                if run_row.model_version
                else None,
                "state": str(run_row.state),
                "message": run_row.message,
                "ended": run_row.ended_at is not None,
                "run_key": run_row.plan.get("run_key"),
                "model_version": run_row.model_version.version if run_row.model_version else None,
                "lineage_inputs": [edge.via for edge in run_row.model_version.inputs]
                if run_row.model_version
                else [],
                "model_prefix": run_row.model_version.object_prefix
                if run_row.model_version
                else None,
            }
            if run_row
            else None
        )
    with create_session() as session:
        note = session.scalar(
            select(DagRun).where(DagRun.dag_id == dag.dag_id, DagRun.run_id == dag_run.run_id)
        ).note
    return {"state": str(dag_run.state), "tasks": states, "run": catalog_run, "note": note}


def stop_through_octotrain(run_row: Run, *, by: str) -> None:
    """What the plugin's stop route does in Airflow's api-server: raise the run's abort flag
    for ``by`` and put the stop's note on its DAG run (this process has the metadata DB)."""
    stop = request_stop(run_row, by=by)
    assert stop.note is not None, stop
    noted = add_run_note(dag_id=dag_id_for(run_row.task_id), run_id=run_row.airflow_run_id,
                         note=stop.note, user_id=None)  # fmt: skip
    assert noted, run_row.airflow_run_id


def task_logs(output: str, task_id: str) -> dict[str, dict[int, str]]:
    """The log of each instance of task ``task_id`` (by map index) in each scenario (by name),
    from what a runner printed on its stdout."""
    found: dict[str, dict[int, str]] = {}
    current: dict[int, list[str]] = {}
    open_index: int | None = None
    for line in output.splitlines():
        if line.startswith("RESULT "):
            scenario = json.loads(line.removeprefix("RESULT "))["scenario"]
            found[scenario] = {index: "\n".join(lines) for index, lines in current.items()}
            current, open_index = {}, None
        elif (starts := _TASK_STARTS.search(line)) and starts[1] == task_id:
            open_index = int(starts[2])
            current.setdefault(open_index, [])
        elif (ends := _TASK_ENDS.search(line)) and ends[1] == task_id:
            open_index = None
        elif open_index is not None:
            current[open_index].append(line)
    return found


def main() -> None:
    tasks = setup()
    for scenario in sys.argv[1:]:
        result = {"scenario": scenario, "task_id": tasks[scenario]} | run_scenario(
            scenario, tasks[scenario]
        )
        print("RESULT " + json.dumps(result, ensure_ascii=False), flush=True)


def run_scenario(scenario: str, task_id: int) -> dict[str, object]:
    """One run of the scenario's task; ``resumed``: a run that fails, then one resuming it."""
    if scenario != "resumed":
        return run(task_id)
    earlier = run(task_id)
    catalog_run = earlier["run"]
    assert isinstance(catalog_run, dict), earlier
    return run(task_id, {"resume_from": catalog_run["id"]}) | {"earlier": earlier}


if __name__ == "__main__":
    main()
