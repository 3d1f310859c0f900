"""What one node receives: DATASET/<name>, MODEL (one version: its files; several: a folder
each), MOUNTS/<name> read-only without a download."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException
from sqlalchemy import delete

from hooks.inputs.mounts import MountUnavailable, expose_mount
from hooks.inputs.node_cache import NodeCache
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_files import FolderRunFiles
from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.models import DatasetVersion, TrainingTask
from octotrain.planning import RunPlan, build_run_plan
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from operators.local.node_endings import recorded_outcome
from operators.local.stage_data import StageDataOperator, stage_one_node
from tests.factories import seed
from tests.hooks.inputs.test_node_cache import put_version

PLAN = RunPlan.model_validate(
    {
        "task_id": 3, "task_name": "t", "project": "p", "run_id": "r", "run_key": "r-1",
        "node_indices": ["single-0"], "master_addr": "127.0.0.1", "master_port": 1,
        "image": "i", "command": ["true"], "parameters": {}, "env": {}, "run_as_user": "1000",
        "data_inputs": [], "input_models": [], "mounts": [], "output_repository_id": 1,
        "output_repository": "m", "lineage": {},
    }
)  # fmt: skip


def test_inputs_models_and_mounts_land_where_the_contract_says(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path / "objects")
    data = put_version(store, tmp_path, "datasets/p/d/v1", {"a.csv": b"x,y"})
    model_1 = put_version(store, tmp_path, "models/p/m/1", {"w.bin": b"w1"})
    model_2 = put_version(store, tmp_path, "models/p/m/2", {"w.bin": b"w2"})
    mounted = put_version(store, tmp_path, "datasets/p/big/v1", {"huge.bin": b"h"})
    cache = NodeCache(tmp_path / "cache", max_bytes=10**9)
    notes: list[str] = []
    layout = RunLayout(tmp_path / "runs", 3, "r-1")
    sources = ([data], [model_1], [mounted])
    stage_one_node(store, cache, PLAN, layout, "single-0", sources, None, notes.append)
    folders = layout.node_folders("single-0")
    assert (folders.dataset / data.name / "a.csv").read_text() == "x,y"
    assert (folders.model / "w.bin").read_text() == "w1"  # one input version: MODEL is it
    mount = folders.mounts / mounted.name
    assert mount.is_symlink() and (mount / "huge.bin").read_bytes() == b"h"
    assert (mount / "huge.bin").stat().st_mode & 0o222 == 0
    assert any("mounted datasets_p_big_v1 read-only" in n for n in notes)

    other = RunLayout(tmp_path / "other", 3, "r-1")
    stage_one_node(store, cache, PLAN, other, "single-0", ([], [model_1, model_2], []), None,
                   notes.append)  # fmt: skip
    model = other.node_folders("single-0").model
    assert (model / model_2.name / "w.bin").read_text() == "w2"  # several: one folder each


def test_a_mount_needs_the_store_visible_as_files(tmp_path: Path) -> None:
    class RemoteStore(LocalFolderStore):
        def local_path(self, prefix: str) -> Path | None:
            return None

    store = RemoteStore(tmp_path / "objects")
    with pytest.raises(MountUnavailable, match="set OCTOTRAIN_MOUNTS_ROOT"):
        expose_mount(store, "datasets/p/d/v1", tmp_path / "mounts" / "d_v1", None)
    (tmp_path / "bucket" / "datasets/p/d/v1").mkdir(parents=True)
    target = expose_mount(store, "datasets/p/d/v1", tmp_path / "m" / "d_v1", tmp_path / "bucket")
    assert target.resolve() == (tmp_path / "bucket" / "datasets/p/d/v1").resolve()
    with pytest.raises(MountUnavailable, match="is not on this node"):
        expose_mount(store, "datasets/p/d/v9", tmp_path / "m" / "x", tmp_path / "bucket")


class _TaskInstance:
    """What ``stage_data`` asks of Airflow's task instance: the plan ``validate`` pushed."""

    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan

    def xcom_pull(self, *, task_ids: str, key: str) -> dict[str, object]:
        assert (task_ids, key) == ("validate", "plan")
        return self.plan.model_dump(mode="json")


def test_an_input_deleted_after_validation_fails_staging_by_name_in_every_init_log(
    octotrain_env: Path, catalog: CatalogHook, tmp_path: Path
) -> None:
    store = LocalFolderStore(octotrain_env / "objects")
    demo = seed(catalog, store)
    with catalog.session() as session:
        task = session.get(TrainingTask, demo.task_id)
        plan = build_run_plan(session, task, run_id="manual__1", master_addr="127.0.0.1",
                              master_port=1, triggered_by="")  # fmt: skip
    with catalog.session() as session:  # deleted behind the catalog's back, as by an admin
        session.execute(delete(DatasetVersion))
    operator = StageDataOperator(task_id="stage_data", training_task_id=demo.task_id)
    with pytest.raises(AirflowFailException, match="dataset house-prices_v1 was deleted"):
        operator.execute({"ti": _TaskInstance(plan)})  # type: ignore[arg-type]
    layout = RunLayout(get_settings().runs_dir, demo.task_id, plan.run_key)
    for node in plan.node_indices:
        init = layout.log_path(layout.log_names(node).init).read_text()
        assert "ERROR dataset house-prices_v1 was deleted after this run was validated" in init
        assert not (layout.node_folders(node).dataset / "house-prices_v1").exists()
        supplemental = layout.log_path(layout.log_names(node).supplemental).read_text()
        assert supplemental.startswith(
            f"node {node} did not start: staging failed because dataset house-prices_v1 was "
            "deleted after this run was validated"
        )


def test_a_staging_failure_is_each_node_s_supplemental_log_and_stops_the_run(
    octotrain_env: Path, catalog: CatalogHook, tmp_path: Path
) -> None:
    """The launches never run after a failed staging: this stage says why for every node."""
    store = LocalFolderStore(octotrain_env / "objects")
    demo = seed(catalog, store)
    with catalog.session() as session:
        task = session.get(TrainingTask, demo.task_id)
        plan = build_run_plan(session, task, run_id="manual__2", master_addr="127.0.0.1",
                              master_port=1, triggered_by="")  # fmt: skip
    [source] = plan.data_inputs
    [key] = [info.key for info in store.list(source.object_prefix)]
    corrupt = tmp_path / "corrupt.csv"
    corrupt.write_text("not the bytes the manifest recorded\n")
    store.put_file(key, corrupt)  # changed behind the catalog's back
    operator = StageDataOperator(task_id="stage_data", training_task_id=demo.task_id)
    with pytest.raises(AirflowFailException, match="staging failed"):
        operator.execute({"ti": _TaskInstance(plan)})  # type: ignore[arg-type]
    layout = RunLayout(get_settings().runs_dir, demo.task_id, plan.run_key)
    first, other = plan.node_indices
    reason = layout.log_path(layout.log_names(first).supplemental).read_text().splitlines()[0]
    assert reason.startswith(f"node {first} did not start: staging failed because ")
    assert "checksum" in reason
    assert recorded_outcome(FolderRunFiles(layout), first) == {"exit_code": None, "reason": reason}
    flag = RunAbortMarker(FolderRunFiles(layout)).flag()
    assert flag is not None and flag.node == first and not flag.stopped
    other_reason = recorded_outcome(FolderRunFiles(layout), other)
    assert other_reason is not None and str(other_reason["reason"]).startswith(f"node {other} ")
