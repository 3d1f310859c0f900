"""Runs that end abnormally with the local launcher, through Airflow's ``dag.test()`` in a
process of their own (``tests/e2e/dag_test_runner.py``'s ``run``), and a node running as the
task's uid. Called by tests/e2e/test_node_endings.py; prints one ``RESULT {json}`` per scenario.

    node_endings_runner.py INTERPRETER SCENARIO ...

INTERPRETER is a Python that uid 1000 may run (for the ``uid`` scenario).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.access import Scope
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.catalog.models import Run, RunState
from octotrain.catalog.named_objects import Algorithms, ResourceSpecs
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from octotrain.storage import ObjectStore
from tests.e2e.dag_test_runner import run, stop_through_octotrain
from tests.factories import add_command_algorithm, add_task, seed

ADMIN = Scope.administrator("node-endings-e2e")
TRAINS_UNTIL_STOPPED = (
    "import time\n"
    "for epoch in range(600):\n"
    "    print('epoch', epoch, flush=True)\n"
    "    time.sleep(0.2)\n"
)
IGNORES_SIGTERM = (
    "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + TRAINS_UNTIL_STOPPED
)
EATS_MEMORY = (
    "import time\n"
    "print('allocating', flush=True)\n"
    "hoard = b'x' * (512 * 1024 * 1024)\n"
    "time.sleep(60)\n"
)
# Tries DATASET (read-only to it), then writes a private model file into OUTPUT.
CHECKS_ITS_USER = (
    "import os, pathlib\n"
    "print('uid', os.getuid(), 'gid', os.getgid(), 'groups', os.getgroups(), flush=True)\n"
    "try:\n"
    "    pathlib.Path(os.environ['DATASET'], 'house-prices_v1', 'mine.txt').write_text('x')\n"
    "except PermissionError:\n"
    "    print('DATASET is read-only', flush=True)\n"
    "folder = pathlib.Path(os.environ['OUTPUT'], 'weights')\n"
    "folder.mkdir(mode=0o700)\n"
    "model = folder / 'model.txt'\n"
    "model.write_text('weights')\n"
    "model.chmod(0o600)\n"
)


def setup(interpreter: str) -> dict[str, int]:
    catalog = default_catalog()
    catalog.migrate()
    store = default_object_store()
    seed(catalog, store)
    for name, code in [("trains-until-stopped", TRAINS_UNTIL_STOPPED),
                       ("ignores-sigterm", IGNORES_SIGTERM), ("eats-memory", EATS_MEMORY),
                       ("checks-its-user", CHECKS_ITS_USER)]:  # fmt: skip
        add_command_algorithm(catalog, name, code)
    with catalog.session() as session:
        ResourceSpecs(session, ADMIN).create(
            "demo", {"name": "tiny", "cpu": 1, "memory_mib": 128, "max_nodes": 1}
        )
        algorithms = Algorithms(session, ADMIN, default_object_store())
        command = algorithms.get("demo", "checks-its-user").command
        algorithms.update("demo", "checks-its-user", {"command": [interpreter, *command[1:]]})
        corrupt_version(session, store)
    single: dict[str, object] = {"node_count": 1, "parameters": {}}
    return {
        "start-refused": add_task(catalog, name="start-refused", **single,
                                  algorithm="trains-until-stopped"),
        "stop-ignored": add_task(catalog, name="stop-ignored", **single,
                                 algorithm="ignores-sigterm"),
        "airflow-kill": add_task(catalog, name="airflow-kill", **single,
                                 algorithm="trains-until-stopped"),
        "staging-fails": add_task(catalog, name="staging-fails", **single,
                                  algorithm="trains-until-stopped",
                                  data_inputs=[{"dataset": "house-prices", "version": "v-bad"}]),
        "oom": add_task(catalog, name="oom", **single, algorithm="eats-memory",
                        resource_spec="tiny"),
        "uid": add_task(catalog, name="uid", **single, algorithm="checks-its-user",
                        run_as_uid=1000),
    }  # fmt: skip


def corrupt_version(session: Session, store: ObjectStore) -> None:
    """Version ``v-bad`` of house-prices, whose object changed after its checksum was recorded
    (what a broken store or a tampered bucket shows)."""
    versions = DatasetVersions(session, ADMIN, store)
    with tempfile.TemporaryDirectory() as scratch:
        original, changed = Path(scratch) / "part.csv", Path(scratch) / "changed.csv"
        original.write_text("x,y\n1,2\n")
        changed.write_text("x,y\n1,3\n")
        files = {"part.csv": original}
        version = versions.create("demo", "house-prices", {"version": "v-bad"}, files)
        versions.publish("demo", "house-prices", "v-bad")
        store.put_file(f"{version.object_prefix}/part.csv", changed)


def when_training(task_id: int, act: Callable[[Run], None]) -> threading.Thread:
    """Call ``act`` with the task's run once its node's train log shows an epoch."""

    def trained(run_row: Run) -> bool:
        layout = RunLayout(get_settings().runs_dir, task_id, str(run_row.plan.get("run_key")))
        log = layout.log_path(layout.log_names("single-0").train)
        return log.is_file() and "epoch" in log.read_text()

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with default_catalog().session() as session:
                active = session.scalars(
                    select(Run).where(Run.task_id == task_id, Run.state == RunState.RUNNING)
                ).one_or_none()
                if active is not None and active.plan and trained(active):
                    act(active)
                    return
            time.sleep(0.1)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def stop_as_alice(run_row: Run) -> None:
    stop_through_octotrain(run_row, by="alice")


def airflow_stops_the_task(_run_row: Run) -> None:
    """What Airflow's supervisor does to a task instance marked failed: SIGTERM its process
    (here ``dag.test()`` runs the task in this one)."""
    os.kill(os.getpid(), signal.SIGTERM)


@contextmanager
def missing_code_folder() -> Iterator[None]:
    """The folder the launcher runs commands from is gone: the OS refuses to start the node."""
    os.environ["OCTOTRAIN_LOCAL_CODE_DIR"] = str(Path(tempfile.gettempdir()) / "gone-code-dir")
    get_settings.cache_clear()
    try:
        yield
    finally:
        del os.environ["OCTOTRAIN_LOCAL_CODE_DIR"]
        get_settings.cache_clear()


def main() -> None:
    interpreter, scenarios = sys.argv[1], sys.argv[2:]
    tasks = setup(interpreter)
    actions = {"stop-ignored": stop_as_alice, "airflow-kill": airflow_stops_the_task}
    for scenario in scenarios:
        watcher = when_training(tasks[scenario], actions[scenario]) if scenario in actions else None
        if scenario == "start-refused":
            with missing_code_folder():
                outcome = run(tasks[scenario])
        else:
            outcome = run(tasks[scenario])
        if watcher is not None:
            watcher.join(timeout=5)
        result = {"scenario": scenario, "task_id": tasks[scenario]} | outcome
        print("RESULT " + json.dumps(result, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
