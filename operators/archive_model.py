"""``archive_model``: the run's OUTPUT becomes the next version of the output repository.

Only after every node succeeded (trigger rule ``all_success`` on the launches); all or nothing
(``hooks/runs/model_archive``): a failed archive leaves no visible version and no objects, and ends
the catalog's run failed. Nodes' OUTPUT folders are merged (a shared output location, as on
the original platform); two nodes writing different content to the same path is an error.
Where the OUTPUT folders are is the launcher's to say (the run folder, or what the pods'
sidecars uploaded).

A run whose nodes all succeeded but wrote no file to OUTPUT succeeds without a model version
when its task says it requires none (``model_required: false``: evaluation and metrics-only
algorithms); otherwise it fails, and node 0's supplemental log says why and what to change.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from hooks.launchers import configured_launcher
from hooks.runs.model_archive import ArchiveFailed, NoModelWritten
from hooks.storage.catalog import CatalogHook, default_catalog
from octotrain.catalog.models import ModelVersion, Run, RunState
from octotrain.contracts import NodeLogNames
from octotrain.planning import RunPlan
from octotrain.run_layout import RunLayout
from octotrain.run_lifecycle import end_run
from octotrain.storage import ObjectStoreError
from octotrain.supplemental_log import SupplementalLog
from operators.training_stage import TrainingStageOperator


class ArchiveModelOperator(TrainingStageOperator):
    ui_color = "#fff7d6"

    def execute(self, context: Context) -> dict[str, Any]:
        plan = self.run_plan(context)
        layout = self.layout(plan)
        catalog = default_catalog()
        with catalog.session() as session:
            run = session.get(Run, plan.catalog_run_id)
            if run is not None and run.model_version is not None:
                self.log.info("run already archived as version %s", run.model_version.version)
                return _describe(plan, run.model_version)
        try:
            version = configured_launcher().archive(plan, layout)
        except NoModelWritten as error:
            if not plan.model_required:
                return _succeeded_without_model(catalog, plan)
            message = f"nothing was archived: {error}"
            _record_failure(catalog, plan, message)
            _explain_on_node_0(plan, layout, str(error))
            raise AirflowFailException(message) from error
        except (ArchiveFailed, ObjectStoreError) as error:
            message = f"nothing was archived: {error}"
            _record_failure(catalog, plan, message)
            raise AirflowFailException(message) from error
        self.log.info("archived %s version %s", plan.output_repository, version.version)
        return _describe(plan, version)


NO_MODEL_NEEDED = (
    "succeeded without a model version: no node wrote to OUTPUT, and the task requires no "
    "model (model_required: false)"
)


def _succeeded_without_model(catalog: CatalogHook, plan: RunPlan) -> dict[str, Any]:
    with catalog.session() as session:
        end_run(session, run_id=plan.catalog_run_id, state=RunState.SUCCESS, reason=NO_MODEL_NEEDED)
    return {"repository": plan.output_repository, "version": None, "reason": NO_MODEL_NEEDED}


def _explain_on_node_0(plan: RunPlan, layout: RunLayout, error: str) -> None:
    """Node 0's supplemental log says why the run failed although its nodes succeeded, where
    the run's files are read now that it has ended."""
    node = plan.node_indices[0]
    log = SupplementalLog(
        f"node {node} ended well, but the run has no model: {error}, and the task requires one",
        (
            "an algorithm that writes no model (evaluation, metrics only) runs in a task with "
            "model_required: false; its runs then succeed without a model version",
        ),
    ).render()
    name = NodeLogNames(task_id=plan.task_id, node_index=node).supplemental
    files = configured_launcher().run_files(layout, live=False)
    files.write(plan.objects.log(name), log.encode("utf-8"))


def _record_failure(catalog: CatalogHook, plan: RunPlan, message: str) -> None:
    """The run ends here (nothing runs after this stage): the catalog must say it failed, or
    it stays active for ever (shown running, the task not deletable)."""
    with catalog.session() as session:
        end_run(session, run_id=plan.catalog_run_id, state=RunState.FAILED, reason=message)


def _describe(plan: RunPlan, version: ModelVersion) -> dict[str, Any]:
    return {
        "repository": plan.output_repository,
        "version": version.version,
        "object_prefix": version.object_prefix,
        "files": version.file_count,
        "size_bytes": version.size_bytes,
    }
