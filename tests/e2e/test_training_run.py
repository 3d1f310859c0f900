"""A training task run through Airflow end to end (``dag.test()``), in the two shapes of an
installation: the embedded default (SQLite for Airflow's metadata DB and the catalog, a local
folder as object store) and the production one (PostgreSQL for both, MinIO/S3 as object store,
here a real S3 server, Ceph's radosgw, on 127.0.0.1 reached through an Airflow connection)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hooks.runs.run_files import StoreRunFiles
from hooks.runs.run_progress import RunPhases
from hooks.storage.object_store import object_store_from_url
from octotrain.contracts import NodeLogNames
from octotrain.node_progress import Phase, parse_phase, parse_samples
from octotrain.run_layout import RunLayout
from octotrain.settings import REPO_ROOT
from octotrain.storage import ObjectStore
from tests.conftest import S3_CONNECTION, new_s3_bucket, postgres_database

SCENARIOS = ["demo", "node-fails", "missing-refs"]


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, str], Path]]:
    """The environment of the runner process and its root folder."""
    root = tmp_path_factory.mktemp(f"e2e-{request.param}")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AIRFLOW", "OCTOTRAIN_"))
    }
    env |= {
        "AIRFLOW_HOME": str(root / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "OCTOTRAIN_STATE_DIR": str(root / "state"),
        "PYTHONPATH": str(REPO_ROOT),
    }
    if request.param == "sqlite":
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{root / 'airflow.db'}"
        yield env, root
        return
    databases = [postgres_database(), postgres_database()]
    airflow_url, catalog_url = (next(database) for database in databases)
    env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = airflow_url
    env["OCTOTRAIN_CATALOG_URL"] = catalog_url
    env["OCTOTRAIN_OBJECT_STORE_URL"] = new_s3_bucket(request.getfixturevalue("s3_server"))
    connection = f"AIRFLOW_CONN_{S3_CONNECTION.upper()}"
    env[connection] = os.environ[connection]
    yield env, root
    for database in databases:
        next(database, None)


@pytest.fixture(scope="module")
def results(backend: tuple[dict[str, str], Path]) -> dict[str, dict[str, Any]]:
    env, root = backend
    migrate = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert migrate.returncode == 0, migrate.stdout[-3000:] + migrate.stderr[-3000:]
    completed = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tests" / "e2e" / "dag_test_runner.py"), *SCENARIOS],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
        check=False,
    )
    (root / "runner.log").write_text(completed.stdout + completed.stderr)
    found = {}
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line.removeprefix("RESULT "))
            found[result["scenario"]] = result
    assert set(found) == set(SCENARIOS), (completed.stdout + completed.stderr)[-6000:]
    return found


def object_store(backend: tuple[dict[str, str], Path]) -> ObjectStore:
    env, root = backend
    return object_store_from_url(
        env.get("OCTOTRAIN_OBJECT_STORE_URL", f"file://{root}/state/objects")
    )


def stored(store: ObjectStore, key: str, scratch: Path) -> bytes:
    copy = scratch / "copy"
    store.get_file(key, copy)
    return copy.read_bytes()


def run_folder(root: Path, result: dict[str, Any]) -> Path:
    return root / "state" / "runs" / str(result["task_id"]) / result["run"]["run_key"]


def test_demo_run_succeeds_with_logs_metrics_and_a_model_version(
    results: dict[str, dict[str, Any]], backend: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    _, root = backend
    demo = results["demo"]
    assert demo["state"] == "success", demo
    assert set(demo["tasks"].values()) == {"success"}
    assert {"launch[0]", "launch[1]"} <= set(demo["tasks"])
    assert demo["run"]["state"] == "success" and demo["run"]["ended"]
    assert demo["run"]["model_version"] == 1
    assert demo["run"]["lineage_inputs"] == ["dataset"]  # house-prices v1, relationally

    folder = run_folder(root, demo)
    layout = RunLayout(root / "state" / "runs", demo["task_id"], folder.name)
    store = object_store(backend)
    staged: dict[str, bool] = {}
    for node_index in ("distributed-0", "distributed-1"):
        names = NodeLogNames(task_id=demo["task_id"], node_index=node_index)
        for name in names.always():
            local = folder / "logs" / name
            assert local.is_file(), name
            collected = f"runs/{demo['task_id']}/{folder.name}/logs/{name}"
            assert stored(store, collected, tmp_path) == local.read_bytes()
        assert not (folder / "logs" / names.supplemental).exists()
        assert "final mse" in (folder / "logs" / names.train).read_text()
        init = (folder / "logs" / names.init).read_text()
        assert "staged house-prices_v1: " in init
        assert "staged linear-regression-numpy v1: " in init  # its code, run from CODE
        staged[node_index] = "reused the verified copy in the node cache" in init
        assert "exited with status 0" in (folder / "logs" / names.sidecar).read_text()
        metrics = layout.node_folders(node_index).metrics
        meta = json.loads((metrics / "metrics.json").read_text())
        assert [m["name"] for m in meta["metas"]] == ["loss", "fit"]
        fit = [json.loads(line) for line in (metrics / "fit.jsonl").read_text().splitlines()]
        assert len(fit) == 60 and set(fit[0]) == {"epoch", "mse", "r2"}
        # its phases and progress: the wrapper sampled the declared chart's x against its total
        phase = parse_phase(layout.phase_path(node_index).read_text())
        assert phase is not None and phase.phase is Phase.DONE
        progress = parse_samples(layout.progress_path(node_index).read_text())
        assert (progress[-1].current, progress[-1].total) == (60.0, 60.0)

    # The nodes share this machine's node cache: one downloads, the other reuses its copy.
    assert sorted(staged.values()) == [False, True]
    prefix = demo["run"]["model_prefix"]
    assert [info.key.removeprefix(prefix + "/") for info in store.list(prefix)] == [
        "model.json",
        "rank-0/weights.npz",
        "rank-1/weights.npz",
    ]
    assert store.list("staging") == []
    # after the run, from the store (where collect_logs put the run folder's files)
    shown = RunPhases(StoreRunFiles(store, layout.objects), ["distributed-0", "distributed-1"])
    ended = shown.progress(run_active=False, now=time.time())
    assert (ended.phase, ended.percent, ended.eta_seconds) == (Phase.DONE, 100.0, None)


def test_failing_node_fails_the_run_stops_the_others_and_archives_nothing(
    results: dict[str, dict[str, Any]], backend: tuple[dict[str, str], Path]
) -> None:
    _, root = backend
    failed = results["node-fails"]
    assert failed["state"] == "failed"
    assert failed["tasks"]["launch[0]"] == failed["tasks"]["launch[1]"] == "failed"
    assert failed["tasks"]["collect_logs"] == "success"
    assert failed["tasks"]["archive_model"] == "upstream_failed"
    assert failed["run"]["state"] == "failed" and failed["run"]["ended"]
    assert failed["run"]["model_version"] is None

    logs = run_folder(root, failed) / "logs"
    names = {
        node: NodeLogNames(task_id=failed["task_id"], node_index=node)
        for node in ("distributed-0", "distributed-1")
    }
    reasons = {
        node: (logs / name.supplemental).read_text().splitlines()[0] for node, name in names.items()
    }  # line 1 of a supplemental log says why
    [culprit] = [node for node, line in reasons.items() if line.startswith(f"node {node} failed")]
    [other] = [node for node in names if node != culprit]
    failure = f"node {culprit} failed with exit code 3: the training program exited with an error"
    assert reasons[culprit] == failure
    # stopped while it trained, or not started when its turn came after the failure
    assert reasons[other] in {
        f"node {other} was {how} because {failure}" for how in ("stopped", "not started")
    }
    assert f"node {culprit} starting" in (logs / names[culprit].train).read_text()
    assert failed["run"]["message"] == (
        f"{failure} (nodes that did not succeed: distributed-0, distributed-1)"
    )
    for name in names.values():
        for file_name in name.always():
            assert (logs / file_name).exists(), file_name
    runs = object_store(backend).list("models/demo/house-price-model/runs")
    archived = results["demo"]["run"]["model_prefix"]
    assert {"/".join(info.key.split("/")[:5]) for info in runs} == {archived}


def test_missing_references_fail_validate_before_anything_is_staged(
    results: dict[str, dict[str, Any]], backend: tuple[dict[str, str], Path]
) -> None:
    _, root = backend
    missing = results["missing-refs"]
    assert missing["state"] == "failed"
    assert missing["tasks"]["validate"] == "failed"
    assert missing["tasks"]["stage_data"] == "upstream_failed"
    assert missing["tasks"]["archive_model"] == "upstream_failed"
    assert missing["run"]["state"] == "failed" and missing["run"]["ended"]
    message = missing["run"]["message"]
    for name in ("deleted-algorithm", "deleted-repository", "v404"):
        assert name in message
    assert not (root / "state" / "runs" / str(missing["task_id"])).exists()
