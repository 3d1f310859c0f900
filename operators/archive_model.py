"""``archive_model``: the run's OUTPUT becomes the next version of the output repository.

Only after every node succeeded (trigger rule ``all_success`` on the launches); all or nothing
(``hooks/model_archive``): a failed archive leaves no visible version and no objects, and ends
the catalog's run failed. Nodes' OUTPUT folders are merged (a shared output location, as on
the original platform); two nodes writing different content to the same path is an error.
Where the OUTPUT folders are is the launcher's to say (the run folder, or what the pods'
sidecars uploaded).
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from hooks.catalog import CatalogHook, default_catalog
from hooks.launchers import configured_launcher
from hooks.model_archive import ArchiveFailed
from octotrain.catalog.models import ModelVersion, Run, RunState
from octotrain.planning import RunPlan
from octotrain.run_lifecycle import end_run
from octotrain.storage import ObjectStoreError
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
        except (ArchiveFailed, ObjectStoreError) as error:
            message = f"nothing was archived: {error}"
            _record_failure(catalog, plan, message)
            raise AirflowFailException(message) from error
        self.log.info("archived %s version %s", plan.output_repository, version.version)
        return _describe(plan, version)


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
