"""Benchmark: judging and creating a large training task through the plugin's REST API.

The task has 10 data inputs, 10 resource mounts and 64 nodes (a ModelArts spec). For each
catalog backend (SQLite, PostgreSQL) it measures, over 200 runs each:

- ``check (domain)``: ``check_task`` alone, no HTTP (every rule, catalog lookups included);
- ``GET project (HTTP)``: an authenticated trivial request to the same API: the baseline of
  what HTTP, Airflow's token check and a catalog session cost by themselves;
- ``POST task (HTTP)``: creating the task through the API (judged, written, committed).

and prints p50 / p95 latencies and each one's ratio to the baseline measured in the same run.
The API is served by uvicorn on 127.0.0.1, as Airflow's api-server serves it.

    uv run python -m bench.task_create [--creates 200] [--backends sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

POSTGRES_ADMIN_URL = os.environ.get(
    "OCTOTRAIN_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
)
NODES = 64
INPUTS = 10


def _prepare_airflow(home: Path) -> None:
    """A private Airflow home whose metadata DB the token check reads (revoked tokens)."""
    os.environ["AIRFLOW_HOME"] = str(home)
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__API_AUTH__JWT_SECRET"] = "octotrain-bench-" + "0123456789abcdef" * 4
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True
    )


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def timed(action: Callable[[int], object], runs: int) -> list[float]:
    samples = []
    for number in range(runs):
        started = time.perf_counter()
        action(number)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


@contextmanager
def catalog_url(backend: str, root: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{root / 'catalog.db'}"
        return
    import sqlalchemy

    name = f"octotrain_bench_{uuid.uuid4().hex[:10]}"
    admin = sqlalchemy.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def build_catalog(url: str, root: Path) -> dict[str, object]:
    """The demo project, a 64-node ModelArts spec and 20 dataset versions; returns the task."""
    from cli.demo import seed_demo
    from hooks.storage.catalog import CatalogHook
    from hooks.storage.local_store import LocalFolderStore
    from octotrain.catalog.access import Scope
    from octotrain.catalog.dataset_versions import DatasetVersions
    from octotrain.catalog.named_objects import Datasets, ResourceSpecs

    admin = Scope.administrator("bench")
    catalog = CatalogHook(url)
    catalog.migrate()
    store = LocalFolderStore(root / "objects")
    seed_demo(catalog, store)
    sample = root / "part-0.csv"
    sample.write_text("x,y\n1,2\n")
    with catalog.session() as session:
        ResourceSpecs(session, admin).create(
            "demo",
            {"name": "modelarts-64", "kind": "modelarts", "cpu": 8, "memory_mib": 32768,
             "max_nodes": NODES},
        )  # fmt: skip
        for dataset in ("inputs", "mounted"):
            Datasets(session, admin, store).create(
                "demo", {"name": dataset, "sample_type": "table", "annotation_status": "annotated"}
            )
            versions = DatasetVersions(session, admin, store)
            for number in range(1, INPUTS + 1):
                versions.create("demo", dataset, {"version": f"v{number}"}, {"a.csv": sample})
                versions.publish("demo", dataset, f"v{number}")
    catalog.dispose()
    return {
        "project": "demo",
        "resource_spec": "modelarts-64",
        "node_count": NODES,
        "priority": 5,
        "algorithm": "linear-regression-numpy",
        "parameters": {"epochs": 10},
        "model_repository": "house-price-model",
        "data_inputs": [{"dataset": "inputs", "version": f"v{n}"} for n in range(1, INPUTS + 1)],
        "mounts": [{"dataset": "mounted", "version": f"v{n}"} for n in range(1, INPUTS + 1)],
    }


@contextmanager
def served_api(port: int) -> Iterator[str]:
    import uvicorn

    from plugins.app import create_app

    server = uvicorn.Server(
        uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def bench_backend(backend: str, runs: int) -> list[tuple[str, list[float]]]:
    import httpx
    from airflow.api_fastapi.app import create_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    from hooks.local.local_process import free_port
    from hooks.storage.catalog import CatalogHook, catalog_for
    from octotrain.catalog.access import Scope
    from octotrain.settings import get_settings
    from octotrain.task_rules import check_task

    with tempfile.TemporaryDirectory(prefix=f"bench-{backend}-") as scratch:
        root = Path(scratch)
        with catalog_url(backend, root) as url:
            document = build_catalog(url, root)
            os.environ["OCTOTRAIN_STATE_DIR"] = str(root / "state")
            os.environ["OCTOTRAIN_CATALOG_URL"] = url
            os.environ["OCTOTRAIN_OBJECT_STORE_URL"] = f"file://{root / 'objects'}"
            get_settings.cache_clear()
            catalog_for.cache_clear()

            domain = CatalogHook(url)
            admin = Scope.administrator("bench")

            def check(number: int) -> None:
                with domain.session() as session:
                    check_task(session, admin, document | {"name": f"checked-{number}"})

            checks = timed(check, runs)
            domain.dispose()

            token = create_auth_manager().generate_jwt(
                SimpleAuthManagerUser(username="bench", role="admin")
            )
            headers = {"Authorization": f"Bearer {token}"}
            with served_api(free_port()) as base, httpx.Client(base_url=base) as client:

                def baseline(_number: int) -> None:
                    client.get("/api/v1/projects/demo", headers=headers).raise_for_status()

                def create(number: int) -> None:
                    response = client.post(
                        "/api/v1/tasks",
                        json=document | {"name": f"bench-{number}"},
                        headers=headers,
                    )
                    if response.status_code != 201:
                        raise RuntimeError(response.text)

                timed(baseline, 20)  # warm the connection pool and the app
                baselines = timed(baseline, runs)
                creates = timed(create, runs)
            catalog_for(url).dispose()
            catalog_for.cache_clear()
    return [
        ("check (domain)", checks),
        ("GET project (HTTP)", baselines),
        ("POST task (HTTP)", creates),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=200)
    parser.add_argument("--backends", default="sqlite,postgresql")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-airflow-") as home:
        _prepare_airflow(Path(home))
        print(
            f"task: {INPUTS} data inputs, {INPUTS} mounts, {NODES} nodes; "
            f"{arguments.creates} runs each"
        )
        print(f"{'backend':<11}{'operation':<22}{'p50 ms':>9}{'p95 ms':>9}{'p50 ratio':>11}")
        for backend in arguments.backends.split(","):
            results = bench_backend(backend, arguments.creates)
            base = statistics.median(results[1][1])
            for label, samples in results:
                p50, p95 = statistics.median(samples), percentile(samples, 0.95)
                print(f"{backend:<11}{label:<22}{p50:>9.2f}{p95:>9.2f}{p50 / base:>10.2f}x")


if __name__ == "__main__":
    main()
