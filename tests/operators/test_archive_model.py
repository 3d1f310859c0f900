from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException

from hooks.runs.model_archive import lineage_edges
from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.models import Run, RunState, TrainingTask
from octotrain.contracts import NodeLogNames
from octotrain.planning import RunPlan, build_run_plan
from operators.archive_model import ArchiveModelOperator
from tests.factories import seed
from tests.stored_run_files import stored_text


def test_lineage_edges_name_every_dataset_version_cache_and_input_model() -> None:
    plan = RunPlan.model_validate(
        {
            "task_id": 1, "task_name": "t", "project": "p", "run_id": "r", "run_key": "r-1",
            "node_indices": ["single-0"], "master_addr": "127.0.0.1", "master_port": 1,
            "image": "i", "command": ["true"], "parameters": {}, "env": {}, "run_as_user": "1000",
            "mounts": [], "output_repository_id": 1, "output_repository": "m", "lineage": {},
            "data_inputs": [
                {"name": "d_v1", "object_prefix": "x", "kind": "dataset", "dataset_version_id": 4},
                {"name": "hot", "object_prefix": "y", "kind": "cache", "dataset_version_id": 4},
            ],
            "input_models": [
                {"name": "m_1", "object_prefix": "z", "kind": "model", "model_version_id": 9}
            ],
        }
    )  # fmt: skip
    edges = [(e.via, e.dataset_version_id, e.input_model_version_id) for e in lineage_edges(plan)]
    assert edges == [("dataset", 4, None), ("cache:hot", 4, None), ("model", None, 9)]


class _TaskInstance:
    """What ``archive_model`` asks of Airflow's task instance: the plan ``validate`` pushed."""

    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan

    def xcom_pull(self, *, task_ids: str, key: str) -> dict[str, object]:
        assert (task_ids, key) == ("validate", "plan")
        return self.plan.model_dump(mode="json")


def _run_writing_nothing(
    octotrain_env: Path, catalog: CatalogHook, *, model_required: bool = True
) -> RunPlan:
    """A running run of the demo task (``model_required`` as given) whose nodes wrote no
    model."""
    demo = seed(catalog, LocalFolderStore(octotrain_env / "objects"))
    with catalog.session() as session:
        task = session.get(TrainingTask, demo.task_id)
        task.spec = task.spec | {"model_required": model_required}
        plan = build_run_plan(session, task, run_id="manual__1", master_addr="127.0.0.1",
                              master_port=1, triggered_by="")  # fmt: skip
        run = Run(task_id=task.id, airflow_run_id="manual__1", state=RunState.RUNNING,
                  node_count=plan.world_size)  # fmt: skip
        session.add(run)
        session.flush()
        return plan.model_copy(update={"catalog_run_id": run.id})


def test_a_run_that_archives_nothing_ends_failed_in_the_catalog(
    octotrain_env: Path, catalog: CatalogHook
) -> None:
    """archive_model is the run's last stage: when it archives nothing, nothing after it would
    end the catalog's run, which would stay running for ever. Node 0's supplemental log says
    why, and what a task whose algorithm writes no model sets."""
    plan = _run_writing_nothing(octotrain_env, catalog)
    operator = ArchiveModelOperator(task_id="archive_model", training_task_id=plan.task_id)
    with pytest.raises(AirflowFailException, match="no model files were written to OUTPUT"):
        operator.execute({"ti": _TaskInstance(plan)})  # type: ignore[arg-type]
    with catalog.session() as session:
        ended = session.get(Run, plan.catalog_run_id)
        assert ended.state == RunState.FAILED and ended.ended_at is not None
        assert ended.message.startswith("nothing was archived: no model files")
    name = NodeLogNames(task_id=plan.task_id, node_index=plan.node_indices[0]).supplemental
    log = stored_text(LocalFolderStore(octotrain_env / "objects"), plan.objects.log(name)) or ""
    assert log.startswith(f"node {plan.node_indices[0]} ended well, but the run has no model")
    assert "model_required: false" in log


def test_a_task_requiring_no_model_succeeds_without_a_version(
    octotrain_env: Path, catalog: CatalogHook
) -> None:
    plan = _run_writing_nothing(octotrain_env, catalog, model_required=False)
    operator = ArchiveModelOperator(task_id="archive_model", training_task_id=plan.task_id)
    described = operator.execute({"ti": _TaskInstance(plan)})  # type: ignore[arg-type]
    assert described["version"] is None
    with catalog.session() as session:
        ended = session.get(Run, plan.catalog_run_id)
        assert ended.state == RunState.SUCCESS and ended.model_version is None
        assert ended.message.startswith("succeeded without a model version")
