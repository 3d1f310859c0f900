"""Run training-task DAGs through Airflow's ``dag.test()`` in a process of their own.

Called by tests/e2e/test_training_run.py with AIRFLOW_HOME, Airflow's metadata DB and the
OCTOTRAIN_* settings in the environment; prints one JSON line per scenario.
"""

from __future__ import annotations

import json
import sys

from sqlalchemy import select

from dags.factory import build_all_dags
from hooks.catalog import default_catalog
from hooks.object_store import default_object_store
from octotrain.catalog.models import Run, TrainingTask
from octotrain.contracts import dag_id_for
from tests.factories import add_command_algorithm, add_task, seed

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


def setup() -> dict[str, int]:
    catalog = default_catalog()
    catalog.migrate()
    demo = seed(catalog, default_object_store())
    add_command_algorithm(catalog, "first-node-fails", FIRST_NODE_FAILS)
    failing = add_task(catalog, name="node-fails", algorithm="first-node-fails", parameters={})
    missing = add_task(catalog, name="missing-refs")
    with catalog.session() as session:
        # References that disappear after the task was saved (renamed, deleted elsewhere).
        task = session.get(TrainingTask, missing)
        task.spec = task.spec | {
            "algorithm": "deleted-algorithm",
            "model_repository": "deleted-repository",
            "data_inputs": [{"dataset": "house-prices", "version": "v404"}],
        }
    return {"demo": demo.task_id, "node-fails": failing, "missing-refs": missing}


def run(task_id: int) -> dict[str, object]:
    dag = build_all_dags()[dag_id_for(task_id)]
    dag_run = dag.test(logical_date=None)
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
    return {"state": str(dag_run.state), "tasks": states, "run": catalog_run}


def main() -> None:
    tasks = setup()
    for scenario in sys.argv[1:]:
        result = {"scenario": scenario, "task_id": tasks[scenario]} | run(tasks[scenario])
        print("RESULT " + json.dumps(result, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
