"""Archiving is all or nothing: a version appears with its manifest, lineage and edges, or
no version and no object at all, whatever fails."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from hooks.runs.model_archive import archive_outputs
from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from hooks.storage.s3_store import s3_store_from_url
from octotrain.catalog.models import DatasetVersion, ModelVersion, Run, RunState, TrainingTask
from octotrain.planning import RunPlan, build_run_plan
from octotrain.storage import ObjectStoreUnavailable
from tests.factories import add_task, seed
from tests.store_doubles import FailingStore

# Archives racing for one repository's next number (fewer than the catalog's connection pool).
RACING_RUNS = 12


def demo_plan(catalog: CatalogHook, store: LocalFolderStore) -> RunPlan:
    demo = seed(catalog, store)
    with catalog.session() as session:
        task = session.get(TrainingTask, demo.task_id)
        plan = build_run_plan(session, task, run_id="manual__1", master_addr="127.0.0.1",
                              master_port=1, triggered_by="alice")  # fmt: skip
        run = Run(task_id=task.id, airflow_run_id="manual__1", state=RunState.RUNNING,
                  node_count=2)  # fmt: skip
        session.add(run)
        session.flush()
        return plan.model_copy(update={"catalog_run_id": run.id})


def outputs(tmp_path: Path) -> dict[str, Path]:
    files = {}
    for relative, data in {"model.json": b"{}", "rank-0/w.npz": b"w" * 100}.items():
        path = tmp_path / "output" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        files[relative] = path
    return files


def versions(catalog: CatalogHook) -> int:
    with catalog.session() as session:
        return session.scalar(select(func.count()).select_from(ModelVersion)) or 0


def test_a_version_points_at_the_runs_upload_with_manifest_and_lineage(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    plan = demo_plan(catalog, store)
    version = archive_outputs(catalog, store, plan, outputs(tmp_path), plan.lineage)
    assert version.version == 1
    assert version.object_prefix == (
        f"models/demo/house-price-model/runs/{plan.task_id}-{plan.run_key}"
    )
    assert set(version.manifest) == {"model.json", "rank-0/w.npz"}
    assert len(version.manifest["rank-0/w.npz"]["blake3"]) == 64
    with catalog.session() as session:
        row = session.get(ModelVersion, version.id)
        assert [edge.via for edge in row.inputs] == ["dataset"]
        assert row.lineage["triggered_by"] == "alice" and "archived_at" in row.lineage
        assert row.lineage["env"] == {"OMP_NUM_THREADS": "1"}
        run = session.get(Run, plan.catalog_run_id)
        assert (run.state, run.model_version_id) == ("success", version.id)


def test_mounted_dataset_versions_are_inputs_of_lineage_both_ways(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    """A resource mount is read by the training like a staged input, so it is lineage too."""
    from octotrain.catalog.named_objects import ResourceSpecs
    from octotrain.catalog.views import DatasetVersionView, ModelVersionView
    from octotrain.tasks import Tasks
    from tests.factories import ADMIN

    demo = seed(catalog, store)
    with catalog.session() as session:
        ResourceSpecs(session, ADMIN).create(
            "demo", {"name": "ma-cpu", "kind": "modelarts", "cpu": 1, "memory_mib": 512,
                     "max_nodes": 4},
        )  # fmt: skip
        Tasks(session, ADMIN).update(
            demo.task_id,
            {"resource_spec": "ma-cpu", "mounts": [{"dataset": "house-prices", "version": "v1"}]},
        )
        task = session.get(TrainingTask, demo.task_id)
        plan = build_run_plan(session, task, run_id="manual__m", master_addr="127.0.0.1",
                              master_port=1, triggered_by="alice")  # fmt: skip
        run = Run(task_id=task.id, airflow_run_id="manual__m", state=RunState.RUNNING,
                  node_count=2)  # fmt: skip
        session.add(run)
        session.flush()
        plan = plan.model_copy(update={"catalog_run_id": run.id})
    assert plan.lineage["mounts"] == [
        {
            "dataset": "house-prices",
            "version": "v1",
            "dataset_version_id": plan.mounts[0].dataset_version_id,
        }
    ]
    version = archive_outputs(catalog, store, plan, outputs(tmp_path), plan.lineage)
    with catalog.session() as session:
        row = session.get(ModelVersion, version.id)
        inputs = ModelVersionView.of(row).inputs
        assert {"dataset": "house-prices", "version": "v1", "via": "mount"} in inputs
        assert {"dataset": "house-prices", "version": "v1", "via": "dataset"} in inputs
        mounted = session.get(DatasetVersion, plan.mounts[0].dataset_version_id)
        produced = DatasetVersionView.of(mounted).produced
        assert {"repository": "house-price-model", "version": 1, "via": "mount"} in produced


def test_the_store_going_down_mid_upload_leaves_no_version_and_no_object(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    plan = demo_plan(catalog, store)
    failing = FailingStore(store.root, puts_left=1)
    with pytest.raises(ObjectStoreUnavailable, match="connection refused"):
        archive_outputs(catalog, failing, plan, outputs(tmp_path), plan.lineage)
    assert versions(catalog) == 0
    assert store.list("models") == []


def test_a_catalog_that_fails_the_commit_leaves_no_object(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    plan = demo_plan(catalog, store)
    broken = CatalogHook(f"sqlite:///{tmp_path / 'not-migrated.db'}")
    with pytest.raises(OperationalError, match="no such table"):
        archive_outputs(broken, store, plan, outputs(tmp_path), plan.lineage)
    broken.dispose()
    assert store.list("models") == []
    assert versions(catalog) == 0


def test_secrets_in_the_environment_are_masked_in_lineage(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    plan = demo_plan(catalog, store)
    shown = plan.model_copy(update={"env": {"HF_TOKEN": "hf_abc", "THREADS": "2"}}).shown()
    assert shown["env"] == {"HF_TOKEN": "***", "THREADS": "2"}


def test_an_unreachable_store_is_retried_then_nothing_is_archived(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = demo_plan(catalog, store)
    monkeypatch.setenv(
        "AIRFLOW_CONN_GONE",
        '{"conn_type": "aws", "login": "access", "password": "secret", '
        '"extra": {"endpoint_url": "http://127.0.0.1:9"}}',
    )
    gone = s3_store_from_url("s3://models?conn_id=gone", attempts=3, first_wait_seconds=0.05)
    with pytest.raises(ObjectStoreUnavailable, match="after 3 attempts"):
        archive_outputs(catalog, gone, plan, outputs(tmp_path), plan.lineage)
    assert versions(catalog) == 0


def test_runs_ending_together_each_archive_one_version(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    """Runs archiving into one repository at the same moment each get their own number: none
    loses every attempt to the others (bench.load, 50 runs at once, lost one on PostgreSQL)."""
    plan = demo_plan(catalog, store)
    plans = []
    with catalog.session() as session:
        for number in range(RACING_RUNS):
            run = Run(task_id=plan.task_id, airflow_run_id=f"manual__race-{number}",
                      state=RunState.RUNNING, node_count=1)  # fmt: skip
            session.add(run)
            session.flush()
            plans.append(plan.model_copy(update={"run_id": run.airflow_run_id,
                                                 "run_key": f"race-{number}",
                                                 "catalog_run_id": run.id}))  # fmt: skip
    files = outputs(tmp_path)
    with ThreadPoolExecutor(max_workers=RACING_RUNS) as pool:
        archived = list(
            pool.map(lambda each: archive_outputs(catalog, store, each, files, each.lineage), plans)
        )
    assert sorted(version.version for version in archived) == list(range(1, RACING_RUNS + 1))
    with catalog.session() as session:
        states = {session.get(Run, each.catalog_run_id).state for each in plans}
    assert states == {RunState.SUCCESS}


def test_runs_of_two_tasks_with_one_run_id_each_archive_their_own_version(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    """Two tasks archiving into one repository on one cron schedule: their scheduled runs have
    one Airflow run id. The second must archive its own model, not take the first's version
    for one its retry would find."""
    plan = demo_plan(catalog, store)
    other_task = add_task(catalog, name="same-schedule")
    with catalog.session() as session:
        run = Run(task_id=other_task, airflow_run_id=plan.run_id, state=RunState.RUNNING,
                  node_count=2)  # fmt: skip
        session.add(run)
        session.flush()
        other = plan.model_copy(update={"task_id": other_task, "catalog_run_id": run.id})
    first = archive_outputs(catalog, store, plan, outputs(tmp_path), plan.lineage)
    second_files = outputs(tmp_path / "second")
    second_files["model.json"].write_bytes(b'{"task": "same-schedule"}')
    second = archive_outputs(catalog, store, other, second_files, other.lineage)
    assert (first.version, second.version) == (1, 2)
    assert first.object_prefix != second.object_prefix
    assert (store.root / second.object_prefix / "model.json").read_bytes() == (
        b'{"task": "same-schedule"}'
    )
    with catalog.session() as session:
        assert session.get(Run, other.catalog_run_id).model_version_id == second.id
        assert session.get(Run, plan.catalog_run_id).model_version_id == first.id


def test_an_archive_tried_again_finds_the_runs_version_and_adds_none(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    """A worker killed after the commit and before it reported success: Airflow tries
    ``archive_model`` again; it must find the version, not archive a second one."""
    plan = demo_plan(catalog, store)
    first = archive_outputs(catalog, store, plan, outputs(tmp_path), plan.lineage)
    again = archive_outputs(catalog, store, plan, outputs(tmp_path), plan.lineage)
    assert (again.id, again.version) == (first.id, 1) and versions(catalog) == 1
    # a try after the commit uploads nothing: the store may even be down meanwhile
    down = FailingStore(store.root, puts_left=0, gets_left=0)
    assert archive_outputs(catalog, down, plan, outputs(tmp_path), plan.lineage).id == first.id
    assert {info.key.rsplit("/", 1)[-1] for info in store.list(first.object_prefix)} == {
        "model.json",
        "w.npz",
    }


def test_two_tries_of_one_archive_at_once_make_one_version(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    """A retry running beside a task runner that survived its worker's death."""
    plan = demo_plan(catalog, store)
    files = outputs(tmp_path)
    with ThreadPoolExecutor(max_workers=2) as pool:
        tries = list(pool.map(lambda _: archive_outputs(catalog, store, plan, files,
                                                        plan.lineage), range(2)))  # fmt: skip
    assert tries[0].id == tries[1].id and versions(catalog) == 1
    assert len(store.list(tries[0].object_prefix)) == 2
