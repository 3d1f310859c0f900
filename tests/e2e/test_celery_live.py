"""The production shape of an installation, for real on this machine: Airflow with the
CeleryExecutor (broker: the Redis on 127.0.0.1:6379, under a key prefix of its own; results:
the PostgreSQL metadata DB), a scheduler and TWO Celery workers of two processes each, the
catalog on PostgreSQL, the object store and Airflow's task logs on S3 (Ceph's radosgw on
127.0.0.1, a real S3 server).

A 4-node training task whose nodes rendezvous on MASTER_PORT (like torchrun: every node waits
until all four run) can only finish when its four ``launch`` task instances run at once, that
is spread over both workers. Then nothing may be lost or doubled: every node's log files
collected once with the training's output, every metric point once, one model version.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from cli.demo import DemoSeed
from hooks.storage.catalog import CatalogHook
from hooks.storage.object_store import object_store_from_url
from octotrain.contracts import NodeLogNames, dag_id_for
from octotrain.planning import run_key
from octotrain.settings import REPO_ROOT
from octotrain.storage import ObjectStore
from tests.conftest import S3_CONNECTION, new_s3_bucket, postgres_database
from tests.factories import add_command_algorithm, add_task
from tests.live_airflow import HTTP_SECONDS, LiveAirflow, demo_airflow
from tests.live_celery import (
    broker_keys,
    celery_broker,
    celery_settings,
    celery_workers,
    ping_workers,
)
from tests.radosgw import S3Endpoint

pytestmark = pytest.mark.postgres

NODES = [f"distributed-{rank}" for rank in range(4)]
POINTS = 40  # metric points each node appends
REQUEST_ID = "celery-1"
RUN_SECONDS = 360  # five stages, four nodes at once, on a loaded machine; pytest's limit is 600
MEET_SECONDS = 240  # for the last of the four nodes to start, once the first has
LOGS_CONN = S3_CONNECTION  # the s3_server fixture's Airflow connection

# Each node declares a chart and appends POINTS points, meets the other nodes on MASTER_PORT
# (rank 0 listens, the others connect, every node waits for all), writes its part of the
# model to OUTPUT and says so on stdout.
TRAIN = f"""
import os, socket, time
from pathlib import Path
from octotrain_metrics import MetricsWriter

node, rank, world = os.environ["NODE_INDEX"], int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
print(f"node {{node}} rank {{rank}} of {{world}} starting", flush=True)
metrics = MetricsWriter()
metrics.declare("loss", x="step", ys=["mse"], description="training-loss")
for step in range(1, {POINTS} + 1):
    metrics.log("loss", step=step, mse=1.0 / step)
address = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
deadline = time.monotonic() + {MEET_SECONDS}
if rank == 0:
    with socket.create_server(address) as server:
        server.settimeout({MEET_SECONDS})
        peers = [server.accept()[0] for _ in range(world - 1)]
    for peer in peers:
        peer.sendall(b"go")
        peer.close()
else:
    while True:
        try:
            peer = socket.create_connection(address, timeout={MEET_SECONDS})
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    assert peer.recv(2) == b"go"
    peer.close()
print(f"node {{node}} met all {{world}} nodes", flush=True)
(Path(os.environ["OUTPUT"]) / f"part-{{rank}}.txt").write_text(f"weights of {{node}}\\n")
print(f"node {{node}} trained", flush=True)
"""


@dataclass(frozen=True)
class CeleryRun:
    server: LiveAirflow
    http: httpx.Client  # Airflow's REST API v2
    plugin: httpx.Client  # Octotrain's REST API
    task_id: int
    dag_run_id: str
    catalog_run_id: int
    store: ObjectStore
    s3: Any  # a boto3 S3 client of the S3 server
    bucket: str
    key_prefix: str
    broker_keys_during_run: list[str]
    versions_before: int


@pytest.fixture(scope="module")
def celery_run(
    tmp_path_factory: pytest.TempPathFactory, s3_server: S3Endpoint
) -> Iterator[CeleryRun]:
    """Start the installation, run the 4-node task once, and wait for it."""
    # What the scheduler and the workers import first; failing here says why at once, not
    # as workers that never answer (provider 3.26 imports celery.backends.database.retry,
    # which celery 5.7 removed).
    import_module("airflow.providers.celery.executors.celery_executor")
    root = tmp_path_factory.mktemp("celery")
    # Only the training tasks' DAGs: the store jobs (the data-cache one runs every minute)
    # would take worker slots that the four nodes need at once.
    dags = root / "dags"
    dags.mkdir()
    shutil.copy(REPO_ROOT / "dags" / "training_tasks.py", dags)
    store_url = new_s3_bucket(s3_server)
    bucket = urlsplit(store_url).netloc
    with ExitStack() as stack:
        metadata_db, catalog_db = postgres_database(), postgres_database()
        metadata_url, catalog_url = next(metadata_db), next(catalog_db)
        stack.callback(next, catalog_db, None)  # dropped last, after everything stopped
        stack.callback(next, metadata_db, None)
        key_prefix = stack.enter_context(celery_broker())
        settings = {
            "OCTOTRAIN_STATE_DIR": str(root / "state"),
            "OCTOTRAIN_CATALOG_URL": catalog_url,
            "OCTOTRAIN_OBJECT_STORE_URL": store_url,
            f"AIRFLOW_CONN_{LOGS_CONN.upper()}": os.environ[f"AIRFLOW_CONN_{LOGS_CONN.upper()}"],
            "AIRFLOW__LOGGING__REMOTE_LOGGING": "True",
            "AIRFLOW__LOGGING__REMOTE_BASE_LOG_FOLDER": f"s3://{bucket}/airflow-logs",
            "AIRFLOW__LOGGING__REMOTE_LOG_CONN_ID": LOGS_CONN,
        } | celery_settings(metadata_url, key_prefix)

        def four_nodes(catalog: CatalogHook, _store: ObjectStore, _demo: DemoSeed) -> int:
            add_command_algorithm(catalog, "rendezvous", TRAIN)
            return add_task(
                catalog, name="celery-4", node_count=4, algorithm="rendezvous", parameters={}
            )

        server, task_id = stack.enter_context(
            demo_airflow(
                root,
                settings,
                four_nodes,
                metadata_url=metadata_url,
                dags_folder=dags,
                components=("scheduler", *celery_workers(2, concurrency=2)),
            )
        )
        assert task_id is not None
        headers = server.admin_headers()
        http = stack.enter_context(
            httpx.Client(base_url=f"{server.url}/api/v2", headers=headers, timeout=HTTP_SECONDS)
        )
        plugin = stack.enter_context(
            httpx.Client(
                base_url=f"{server.url}/octotrain/api/v1", headers=headers, timeout=HTTP_SECONDS
            )
        )
        server.wait_until("both Celery workers", lambda: len(ping_workers(key_prefix)) == 2)
        versions_path = "/projects/demo/model-repositories/house-price-model/versions"
        versions_before = plugin.get(versions_path).json()["total_entries"]
        started = plugin.post(f"/tasks/{task_id}/runs", json={"request_id": REQUEST_ID})
        assert started.status_code == 201, started.text
        dag_run_id = started.json()["dag_run_id"]
        run_path = f"/dags/{dag_id_for(task_id)}/dagRuns/{dag_run_id}"
        during = broker_keys(key_prefix)
        state = server.wait_until(
            "the run to end",
            lambda: (s := http.get(run_path).json()["state"]) in ("success", "failed") and s,
            RUN_SECONDS,
        )
        assert state == "success", server.tail_of_logs()
        yield CeleryRun(
            server=server,
            http=http,
            plugin=plugin,
            task_id=task_id,
            dag_run_id=dag_run_id,
            catalog_run_id=started.json()["run"]["id"],
            store=object_store_from_url(store_url),
            s3=s3_server.client(),
            bucket=bucket,
            key_prefix=key_prefix,
            broker_keys_during_run=during,
            versions_before=versions_before,
        )


def task_instances(run: CeleryRun) -> list[dict[str, Any]]:
    path = f"/dags/{dag_id_for(run.task_id)}/dagRuns/{run.dag_run_id}/taskInstances"
    answer = run.http.get(path)
    assert answer.status_code == 200, answer.text
    return answer.json()["task_instances"]


def stored_text(store: ObjectStore, key: str, scratch: Path) -> str:
    copy = scratch / key.replace("/", "_")
    store.get_file(key, copy)
    return copy.read_text()


def test_the_four_nodes_ran_at_once_spread_over_both_workers(celery_run: CeleryRun) -> None:
    instances = task_instances(celery_run)
    assert {ti["task_id"]: ti["state"] for ti in instances} == {
        "validate": "success", "stage_data": "success", "launch": "success",
        "collect_logs": "success", "archive_model": "success",
    }  # fmt: skip
    launches = [ti for ti in instances if ti["task_id"] == "launch"]
    assert sorted(ti["rendered_map_index"] for ti in launches) == NODES
    assert all(ti["state"] == "success" and ti["try_number"] == 1 for ti in launches)
    # Each worker runs two task instances at most: the four met, so each worker ran two.
    hosts = [ti["hostname"].split("@")[0] for ti in launches]
    assert sorted(hosts) == ["w1", "w1", "w2", "w2"], hosts
    run = celery_run.plugin.get(f"/tasks/{celery_run.task_id}/runs").json()["runs"]
    assert [(r["id"], r["state"]) for r in run] == [(celery_run.catalog_run_id, "success")]


def test_every_log_file_and_metric_point_is_collected_once(
    celery_run: CeleryRun, tmp_path: Path
) -> None:
    store, task_id = celery_run.store, celery_run.task_id
    prefix = f"runs/{task_id}/{run_key(celery_run.dag_run_id)}"
    names = {node: NodeLogNames(task_id=task_id, node_index=node) for node in NODES}
    collected = [info.key for info in store.list(f"{prefix}/logs")]
    expected = [f"{prefix}/logs/{n}" for name in names.values() for n in name.always()]
    assert sorted(collected) == sorted(expected)  # 12 files, no supplemental log
    for node, name in names.items():
        train = stored_text(store, f"{prefix}/logs/{name.train}", tmp_path)
        for line in (f"node {node} rank ", f"node {node} met all 4 nodes", f"node {node} trained"):
            assert train.count(line) == 1, (line, train)
        assert stored_text(store, f"{prefix}/logs/{name.init}", tmp_path)
        assert "exited with status 0" in stored_text(
            store, f"{prefix}/logs/{name.sidecar}", tmp_path
        )
        points = stored_text(store, f"{prefix}/metrics/{node}/loss.jsonl", tmp_path).splitlines()
        assert [json.loads(point)["step"] for point in points] == list(range(1, POINTS + 1))


def test_exactly_one_model_version_is_archived_from_all_nodes(celery_run: CeleryRun) -> None:
    path = "/projects/demo/model-repositories/house-price-model/versions"
    versions = celery_run.plugin.get(path).json()["model_versions"]
    assert len(versions) == celery_run.versions_before + 1
    [run] = celery_run.plugin.get(f"/tasks/{celery_run.task_id}/runs").json()["runs"]
    assert run["model_version"] == max(version["version"] for version in versions)
    key = run_key(celery_run.dag_run_id)
    prefix = f"models/demo/house-price-model/runs/{celery_run.task_id}-{key}"
    files = [info.key.removeprefix(prefix + "/") for info in celery_run.store.list(prefix)]
    assert sorted(files) == [f"part-{rank}.txt" for rank in range(4)]


def test_task_logs_land_in_s3_and_airflow_serves_them_from_there(celery_run: CeleryRun) -> None:
    run_folder = f"dag_id={dag_id_for(celery_run.task_id)}/run_id={celery_run.dag_run_id}"
    expected = {
        f"airflow-logs/{run_folder}/task_id={ti['task_id']}/"
        + (f"map_index={ti['map_index']}/" if ti["map_index"] >= 0 else "")
        + "attempt=1.log"
        for ti in task_instances(celery_run)
    }

    def uploaded() -> set[str]:
        listed = celery_run.s3.list_objects_v2(
            Bucket=celery_run.bucket, Prefix=f"airflow-logs/{run_folder}/"
        )
        return {item["Key"] for item in listed.get("Contents", [])}

    # A worker uploads a task instance's log just after the task instance has ended.
    celery_run.server.wait_until("every task log in S3", lambda: uploaded() == expected)
    answer = celery_run.http.get(
        f"/dags/{dag_id_for(celery_run.task_id)}/dagRuns/{celery_run.dag_run_id}"
        "/taskInstances/launch/logs/1",
        params={"map_index": 2},
        headers={"Accept": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    content = answer.json()["content"]
    events = [line.get("event", "") for line in content]
    # Airflow's first lines name where the log was read from, between group markers.
    sources = events[events.index("::group::Log message source details") + 1 :]
    sources = sources[: sources.index("::endgroup::")]
    key = f"airflow-logs/{run_folder}/task_id=launch/map_index=2/attempt=1.log"
    assert sources == [f"s3://{celery_run.bucket}/{key}"]  # not the worker's local copy
    assert any("node distributed-2 started as pid" in event for event in events)


def test_the_broker_keeps_to_its_key_prefix(celery_run: CeleryRun) -> None:
    # Airflow's default queue as kombu declared it: under this test's key prefix
    assert f"{celery_run.key_prefix}_kombu.binding.default" in celery_run.broker_keys_during_run
