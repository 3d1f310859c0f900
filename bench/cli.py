"""Benchmark: how long the ``octotrain`` command takes to start.

Each command runs in a process of its own, as a user runs it, with the embedded default's
settings pointing at a catalog of its own (SQLite, in a temporary folder) holding the demo
project and ``--tasks`` training tasks. For each command it prints the median and spread of
``--repeat`` runs and what it costs above a bare interpreter (``python -c pass``) measured in
the same run, against the goals: ``octotrain --help`` within 0.3 s and ``octotrain task list``
(1,000 tasks) within 0.6 s more than the bare interpreter.

    uv run python -m bench.cli [--tasks 1000] [--repeat 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert, select

COMMAND = str(Path(sys.executable).parent / "octotrain")
GOALS = {"octotrain --help": 0.3, "octotrain task list": 0.6}


def seed_catalog(state: Path, tasks: int) -> None:
    """The demo project and ``tasks`` copies of its task (rows written directly: the bench
    measures listing them, not creating them)."""
    from cli.demo import seed_demo
    from hooks.storage.catalog import CatalogHook
    from hooks.storage.local_store import LocalFolderStore
    from octotrain.catalog.models import TrainingTask

    catalog = CatalogHook(f"sqlite:///{state / 'catalog.db'}")
    catalog.migrate()
    seed_demo(catalog, LocalFolderStore(state / "objects"))
    with catalog.session() as session:
        demo = session.scalars(select(TrainingTask)).first()
        assert demo is not None
        rows = [{"project_id": demo.project_id, "name": f"bench-{number}", "spec": demo.spec,
                 "description": ""} for number in range(tasks - 1)]  # fmt: skip
        session.execute(insert(TrainingTask), rows)
    catalog.dispose()


def timed(command: list[str], env: dict[str, str], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        samples.append(time.perf_counter() - started)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="octotrain-bench-cli-"))
    try:
        seed_catalog(state, args.tasks)
        env = {key: value for key, value in os.environ.items() if not key.startswith("OCTOTRAIN_")}
        env["OCTOTRAIN_STATE_DIR"] = str(state)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "octotrain --help": [COMMAND, "--help"],
            "octotrain task list": [COMMAND, "task", "list"],
        }
        timed(commands["octotrain task list"], env, 1)  # the first run compiles what it must
        results = {name: timed(command, env, args.repeat) for name, command in commands.items()}
    finally:
        shutil.rmtree(state)
    bare = statistics.median(results["python -c pass"])
    print(f"{args.tasks} tasks in the catalog; median of {args.repeat} runs each (seconds)")
    print(f"{'command':24} {'median':>8} {'above bare':>11} {'goal':>6}  runs")
    for name, samples in results.items():
        median = statistics.median(samples)
        goal = GOALS.get(name)
        spread = " ".join(f"{sample:.2f}" for sample in samples)
        print(f"{name:24} {median:8.3f} {median - bare:11.3f} {goal or '':>6}  {spread}")


if __name__ == "__main__":
    main()
