"""Benchmark: a page of a list costs the same whatever the list's length.

Catalogs (SQLite) the same in all but size, rows written directly (the bench measures reading
them): the large one (``--tasks`` 20,000 tasks, ``--runs`` 20,000 runs of one task,
``--versions`` 5,000 versions of one dataset), a small one with 20 of each (the issue's
baseline: its page holds 20 items, not 50), and one with 50 of each (the same 50 items on the
page). For each list, the page of 50 through the REST API (and the console's task list page) is
timed, median of ``--repeat`` requests; the figures are the large catalog's time over each
smaller one's (goal 1.5 at most). The API is served by uvicorn on 127.0.0.1 with an Airflow
token, as Airflow's
api-server serves it.

    uv run python -m bench.lists [--tasks 20000] [--runs 20000] [--versions 5000] [--repeat 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert, select

from bench.task_create import _prepare_airflow, served_api

PAGE = 50
LISTS = {
    "GET /tasks": "/api/v1/tasks?limit=50",
    "GET /tasks/{id}/runs": "/api/v1/tasks/{task}/runs?limit=50&order_by=-id",
    "GET …/datasets/{name}/versions": (
        "/api/v1/projects/demo/datasets/house-prices/versions?limit=50"
    ),
    "console task list": "/ui/tasks?per_page=50",
    "GET /tasks/{id}/usage": "/api/v1/tasks/{task}/usage?limit=50",
}
# A task's usage page carries its total, which sums every run: no goal, its cost is shown.
NO_GOAL = {"GET /tasks/{id}/usage"}


def build(root: Path, *, tasks: int, runs: int, versions: int) -> int:
    """The demo catalog grown to the given sizes; returns the task whose runs are listed."""
    from cli.demo import seed_demo
    from hooks.storage.catalog import CatalogHook
    from hooks.storage.local_store import LocalFolderStore
    from octotrain.catalog.models import (
        DatasetVersion,
        DatasetVersionStatus,
        Run,
        RunState,
        TrainingTask,
    )

    catalog = CatalogHook(f"sqlite:///{root / 'catalog.db'}")
    catalog.migrate()
    seed_demo(catalog, LocalFolderStore(root / "objects"))
    with catalog.session() as session:
        demo = session.scalars(select(TrainingTask)).first()
        first_version = session.scalars(select(DatasetVersion)).first()
        assert demo is not None and first_version is not None
        session.execute(
            insert(TrainingTask),
            [{"project_id": demo.project_id, "name": f"bench-{n}", "spec": demo.spec,
              "description": ""} for n in range(tasks - 1)],
        )  # fmt: skip
        start = datetime(2026, 1, 1, tzinfo=UTC)
        session.execute(
            insert(Run),
            [{"task_id": demo.id, "airflow_run_id": f"manual__{n}", "state": RunState.SUCCESS,
              "node_count": 2, "trigger": "manual", "triggered_by": "bench", "plan": {},
              "started_at": start + timedelta(minutes=n),
              "ended_at": start + timedelta(minutes=n + 1)} for n in range(runs)],
        )  # fmt: skip
        kept = ("object_prefix", "manifest", "size_bytes", "file_count", "content_digest")
        stored = {name: getattr(first_version, name) for name in kept}
        session.execute(
            insert(DatasetVersion),
            [{"dataset_id": first_version.dataset_id, "version": f"b{n}",
              "status": DatasetVersionStatus.PUBLISHED, **stored} for n in range(versions - 1)],
        )  # fmt: skip
        task_id = demo.id
    catalog.dispose()
    return task_id


def measure(root: Path, task_id: int, repeat: int, headers: dict[str, str]) -> dict[str, float]:
    """The median seconds of each list's page of 50 against the catalog in ``root``."""
    import httpx

    from hooks.local.local_process import free_port
    from hooks.storage.catalog import catalog_for
    from octotrain.settings import get_settings

    os.environ["OCTOTRAIN_STATE_DIR"] = str(root / "state")
    os.environ["OCTOTRAIN_CATALOG_URL"] = f"sqlite:///{root / 'catalog.db'}"
    os.environ["OCTOTRAIN_OBJECT_STORE_URL"] = f"file://{root / 'objects'}"
    get_settings.cache_clear()
    catalog_for.cache_clear()
    medians = {}
    with served_api(free_port()) as base, httpx.Client(base_url=base, timeout=120) as client:
        for name, path in LISTS.items():
            url = path.format(task=task_id)
            client.get(url, headers=headers).raise_for_status()  # warm
            samples = []
            for _ in range(repeat):
                started = time.perf_counter()
                client.get(url, headers=headers).raise_for_status()
                samples.append(time.perf_counter() - started)
            medians[name] = statistics.median(samples)
    catalog_for.cache_clear()
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--versions", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="octotrain-bench-lists-") as scratch:
        root = Path(scratch)
        _prepare_airflow(root / "airflow")
        from airflow.api_fastapi.app import create_auth_manager
        from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

        token = create_auth_manager().generate_jwt(
            SimpleAuthManagerUser(username="bench", role="admin")
        )
        headers = {"Authorization": f"Bearer {token}"}
        sizes = {"20": (20, 20, 20), "50": (50, 50, 50),
                 "large": (args.tasks, args.runs, args.versions)}  # fmt: skip
        results = {}
        for label, (tasks, runs, versions) in sizes.items():
            folder = root / label
            folder.mkdir()
            task_id = build(folder, tasks=tasks, runs=runs, versions=versions)
            results[label] = measure(folder, task_id, args.repeat, headers)
    sizes_shown = f"{args.tasks} tasks / {args.runs} runs / {args.versions} versions"
    print(f"a page of {PAGE}: median of {args.repeat} requests (ms); catalogs of 20 and 50 "
          f"of each, and large: {sizes_shown}")  # fmt: skip
    print(f"{'list':34} {'20':>7} {'50':>7} {'large':>7} {'/20':>6} {'/50':>6}  goal")
    for name in LISTS:
        few, page, large = (results[size][name] * 1000 for size in ("20", "50", "large"))
        print(f"{name:34} {few:7.1f} {page:7.1f} {large:7.1f} {large / few:6.2f} "
              f"{large / page:6.2f}  {'-' if name in NO_GOAL else '1.5'}")  # fmt: skip


if __name__ == "__main__":
    main()
