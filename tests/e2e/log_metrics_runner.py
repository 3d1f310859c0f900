"""Run a plain script (no metrics code) whose algorithm declares a metric definition, through
Airflow's ``dag.test()`` on the local launcher; print what the charts read as one RESULT line.

Called by tests/e2e/test_log_metrics_run.py with AIRFLOW_HOME, Airflow's metadata DB and the
OCTOTRAIN_* settings in the environment.
"""

from __future__ import annotations

import json
import time

from sqlalchemy import select

from hooks.launchers import metrics_of, progress_of
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.models import Run
from octotrain.catalog.named_objects import Algorithms
from tests.e2e.dag_test_runner import run
from tests.factories import ADMIN, add_task, seed

# Coloured, CRLF-ended lines, and a last line the script never ends.
PLAIN_SCRIPT = (
    "import os, pathlib\n"
    "for epoch in range(1, 6):\n"
    "    print(f'\\x1b[36mepoch {epoch}\\x1b[0m loss={1 / epoch:.4f}', end='\\r\\n', flush=True)\n"
    "pathlib.Path(os.environ['OUTPUT'], 'model.txt').write_text('w = 1')\n"
    "print('final loss=0.1', end='', flush=True)\n"
)
# Its total, the run's value of the parameter "epochs", makes the chart the node's progress.
DEFINITIONS = [{"name": "损失", "regex": r"loss=([0-9.e-]+)", "smooth": True, "total": "epochs"}]
EPOCHS = {"name": "epochs", "type": "int", "default": 6}


def main() -> None:
    catalog = default_catalog()
    catalog.migrate()
    seed(catalog, default_object_store())
    with catalog.session() as session:
        Algorithms(session, ADMIN, default_object_store()).create(
            "demo",
            {
                "name": "plain-script",
                "image": "python:3.11-slim",
                "command": ["python", "-c", PLAIN_SCRIPT],
                "sample_type": "table",
                "parameters": [EPOCHS],
                "metric_definitions": DEFINITIONS,
            },
        )
    task_id = add_task(catalog, name="plain", algorithm="plain-script", parameters={}, node_count=1)
    result = run(task_id)
    with catalog.session() as session:
        run_row = session.scalars(select(Run).where(Run.task_id == task_id)).one()
        metrics = metrics_of(run_row)
        meta = metrics.meta("single-0")
        charts = {
            chart.name: {
                "x": list(columns.x),
                "lines": {name: list(values) for name, values in columns.lines.items()},
            }
            for chart in (meta.charts if meta else [])
            for columns in [metrics.columns("single-0", chart)]
        }
        result |= {
            "charts": charts,
            "problems": [str(problem) for problem in meta.problems] if meta else None,
            "totals": [chart.total for chart in meta.charts] if meta else None,
            "progress": [
                {"phase": node.phase, "percent": node.percent, "current": node.current}
                for node in progress_of(run_row, now=time.time()).nodes
            ],
            "final_metrics": run_row.model_version.lineage.get("metrics")
            if run_row.model_version
            else None,
        }
    print("RESULT " + json.dumps(result, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
