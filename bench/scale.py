"""Benchmark: how Octotrain scales with thousands of training tasks, and with many trainings at
once on few worker slots.

- ``task start``: what each task process of a run pays before its operator runs, with 1,
  1,000 and 5,000 tasks in the catalog: a fresh interpreter that loads Airflow's plugins (as a
  task runner does) and parses the tasks' DAG file with Airflow's parsing context naming one
  task's DAG. Goal: the 5,000 figure within 1.2x of the 1 figure. Baseline: the same for a
  DAG file of one BashOperator.
- ``dag-processor``: the same file parsed without a parsing context (every task's DAG), as the
  dag-processor does: the file's import, which must stay well under Airflow's import timeout
  (``[core] dagbag_import_timeout``, 30 s by default), and the serialization of its DAGs that
  follows in the same process (``[dag_processor] dag_file_processor_timeout``, 50 s, bounds
  both).
- ``kubernetes`` (``--kubernetes``): N two-node trainings at once on the Kubernetes launcher
  with a small pool of worker slots, against the tests' real control plane (built from Go
  modules, with a node of the tests' node agent), in a real
  Airflow with a triggerer on PostgreSQL: the peak trainings and pods at once, the peak task
  instances running (at most the slots) and deferred, the wall time; checks that every run
  succeeded with its model version and logs and left no pod, Service or process
  (``bench/scale_kubernetes.py`` says how). Goal: 50 trainings at once with at most 8 slots.
  A 2-core machine holds it with 4 slots (``--slots 4``): with 8, eight task runners and a
  hundred starting containers starve each other, task runners' imports of the DAG file run over
  Airflow's 30 s timeout, and a task rescheduled three times fails its run.

The first two: each figure is the median of ``--repeats`` fresh processes (wall time,
interpreter start included). The catalog is SQLite; the tasks are copies of the demo task under
other names, written in bulk (their rules were judged once, for the demo). ``--sizes ''``
skips them.

    uv run python -m bench.scale [--sizes 1,1000,5000] [--repeats 5]
    uv run python -m bench.scale --sizes '' --kubernetes [--trainings 50] [--slots 8] \\
        [--seconds 900] [--per-task 5] [--pod-poll 10]

It exits with 1 when a check of the Kubernetes part failed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.scale_kubernetes import Size, run_kubernetes
from octotrain.settings import REPO_ROOT

TASKS_DAG_FILE = REPO_ROOT / "dags" / "training_tasks.py"
IMPORT_TIMEOUT = 30.0  # [core] dagbag_import_timeout's default
BARE_DAG = """
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG

with DAG(dag_id="bare", schedule=None):
    BashOperator(task_id="run", bash_command="true")
"""
# What a task runner does before the operator: load plugins, parse the DAG's file.
PARSE = """
import sys, time
from airflow import plugins_manager
from airflow.dag_processing.dagbag import DagBag
from airflow.serialization.serialized_objects import DagSerialization
plugins_manager.ensure_plugins_loaded()
started = time.perf_counter()
bag = DagBag(dag_folder=sys.argv[1])
parsed = time.perf_counter()
assert not bag.import_errors, bag.import_errors
if len(sys.argv) > 2:
    for dag in bag.dags.values():
        DagSerialization.serialize_dag(dag)
print(len(bag.dags), parsed - started, time.perf_counter() - parsed)
"""


def fill_catalog(url: str, root: Path, tasks: int) -> int:
    """The demo plus ``tasks - 1`` copies of its task; returns the demo task's id."""
    from hooks.storage.catalog import CatalogHook
    from hooks.storage.local_store import LocalFolderStore
    from octotrain.catalog.models import TrainingTask
    from tests.factories import seed

    catalog = CatalogHook(url)
    catalog.migrate()
    demo = seed(catalog, LocalFolderStore(root / "objects"))
    with catalog.session() as session:
        original = session.get(TrainingTask, demo.task_id)
        assert original is not None
        session.add_all(
            TrainingTask(
                project_id=original.project_id,
                name=f"copy-{number}",
                description=original.description,
                spec=original.spec | {"name": f"copy-{number}"},
                container_user=original.container_user,
            )
            for number in range(1, tasks)
        )
    catalog.dispose()
    return demo.task_id


def parse_seconds(
    dag_file: Path, env: dict[str, str], repeats: int, *, serialize: bool = False
) -> tuple[float, int, float, float]:
    """Median wall time of a fresh process parsing ``dag_file``, how many DAGs it built, and
    (medians) how long the file's import took in it (what ``[core] dagbag_import_timeout``
    bounds) and the serialization of its DAGs (which the dag-processor then does)."""
    walls, imports, serializations, built = [], [], [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", PARSE, str(dag_file), *(["serialize"] if serialize else [])],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        walls.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        count, imported, serialized = done.stdout.strip().splitlines()[-1].split()
        built = int(count)
        imports.append(float(imported))
        serializations.append(float(serialized))
    median = statistics.median
    return median(walls), built, median(imports), median(serializations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,1000,5000", help="catalog sizes; '' skips")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--kubernetes", action="store_true", help="run the Kubernetes part")
    parser.add_argument("--trainings", type=int, default=50, help="two-node runs at once")
    parser.add_argument("--slots", type=int, default=8, help="[core] parallelism")
    parser.add_argument("--seconds", type=float, default=900, help="each training's sleep")
    parser.add_argument("--per-task", type=int, default=5, help="runs of one task at most")
    parser.add_argument("--pod-poll", type=float, default=10, help="pod_poll_seconds")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds for the runs")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    if sizes:
        task_start_and_dag_processor(sizes, args.repeats)
    if args.kubernetes:
        size = Size(
            args.trainings, args.slots, args.seconds, args.per_task, args.pod_poll, args.timeout
        )
        if not run_kubernetes(size):
            sys.exit(1)


def task_start_and_dag_processor(sizes: list[int], repeats: int) -> None:
    """The first two parts, for catalogs of each of ``sizes`` tasks."""
    with tempfile.TemporaryDirectory(prefix="octotrain-bench-scale-") as scratch:
        root = Path(scratch)
        base_env = {key: value for key, value in os.environ.items()
                    if not key.startswith(("AIRFLOW", "OCTOTRAIN_"))}  # fmt: skip
        base_env |= {
            "AIRFLOW_HOME": str(root / "airflow"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "PYTHONPATH": str(REPO_ROOT),
        }
        bare = root / "bare" / "bare.py"
        bare.parent.mkdir()
        bare.write_text(BARE_DAG)
        runner = base_env | {"_AIRFLOW_PARSING_CONTEXT_DAG_ID": "bare",
                             "_AIRFLOW_PARSING_CONTEXT_TASK_ID": "run"}  # fmt: skip
        baseline, _, _, _ = parse_seconds(bare, runner, repeats)
        print(f"baseline: task start of a bare BashOperator DAG      {baseline:7.2f} s")
        starts: dict[int, float] = {}
        for size in sizes:
            folder = root / f"catalog-{size}"
            folder.mkdir()
            url = f"sqlite:///{folder / 'catalog.db'}"
            demo = fill_catalog(url, folder, size)
            env = base_env | {
                "OCTOTRAIN_STATE_DIR": str(folder / "state"),
                "OCTOTRAIN_CATALOG_URL": url,
                "OCTOTRAIN_OBJECT_STORE_URL": f"file://{folder / 'objects'}",
            }
            runner = env | {"_AIRFLOW_PARSING_CONTEXT_DAG_ID": f"octotrain_task_{demo}",
                            "_AIRFLOW_PARSING_CONTEXT_TASK_ID": "validate"}  # fmt: skip
            starts[size], _, _, _ = parse_seconds(TASKS_DAG_FILE, runner, repeats)
            _, built, imported, serialized = parse_seconds(
                TASKS_DAG_FILE, env, max(1, repeats // 2), serialize=True
            )
            print(
                f"{size:>5} tasks: task start {starts[size]:6.2f} s "
                f"({starts[size] / baseline:4.2f}x bare, "
                f"{starts[size] / starts[sizes[0]]:4.2f}x {sizes[0]} task(s));  "
                f"dag-processor: the file's import {imported:6.2f} s for {built} DAGs "
                f"({imported / IMPORT_TIMEOUT:4.2f}x Airflow's import timeout), "
                f"their serialization {serialized:6.2f} s"
            )


if __name__ == "__main__":
    main()
