"""``archive_model``: the run's OUTPUT becomes the next version of the output repository.

Only after every node succeeded (trigger rule ``all_success`` on the launches); all or nothing
(``hooks/model_archive``): a failed archive leaves no visible version and no objects, and ends
the catalog's run failed. Nodes' OUTPUT folders are merged (a shared output location, as on
the original platform); two nodes writing different content to the same path is an error. With
the local launcher the OUTPUT folders are in the run folder; with Kubernetes the pods' sidecars
uploaded them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from hooks.catalog import CatalogHook, default_catalog
from hooks.hashing_io import file_checksum
from hooks.model_archive import (
    ArchiveFailed,
    archive_outputs,
    archive_stored_outputs,
    stored_outputs,
)
from hooks.object_store import default_object_store
from octotrain.catalog.models import ModelVersion, Run, RunState
from octotrain.metrics import final_values
from octotrain.planning import RunPlan
from octotrain.run_layout import RunLayout
from octotrain.run_lifecycle import end_run
from octotrain.settings import get_settings
from octotrain.storage import ObjectStore, ObjectStoreError
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
        store = default_object_store()
        try:
            if get_settings().launcher == "kubernetes":
                version = _archive_from_store(catalog, store, plan)
            else:
                version = _archive_from_run_folder(catalog, store, plan, layout)
        except (ArchiveFailed, ObjectStoreError, AirflowFailException) as error:
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


def _archive_from_run_folder(
    catalog: CatalogHook, store: ObjectStore, plan: RunPlan, layout: RunLayout
) -> ModelVersion:
    """The local launcher: the nodes' OUTPUT folders are in the run folder."""
    files = merged_outputs(layout, plan.node_indices)
    if not files:
        raise ArchiveFailed("no model files were written to OUTPUT by any node")
    metrics = final_values(layout.node_folders(plan.node_indices[0]).metrics)
    return archive_outputs(catalog, store, plan, files, plan.lineage | {"metrics": metrics})


def _archive_from_store(catalog: CatalogHook, store: ObjectStore, plan: RunPlan) -> ModelVersion:
    """The Kubernetes launcher: the pods' sidecars uploaded each node's OUTPUT and metrics."""
    outputs = stored_outputs(store, plan)
    if not outputs:
        raise ArchiveFailed("no model files were written to OUTPUT by any node")
    with tempfile.TemporaryDirectory(prefix="octotrain-metrics-") as scratch:
        prefix = plan.objects.metrics(plan.node_indices[0])
        for info in store.list(prefix):
            store.get_file(info.key, Path(scratch) / info.key[len(prefix) + 1 :])
        metrics = final_values(Path(scratch))
    return archive_stored_outputs(
        catalog, store, plan, outputs, plan.lineage | {"metrics": metrics}
    )


def merged_outputs(layout: RunLayout, node_indices: list[str]) -> dict[str, Path]:
    """Every file of every node's OUTPUT by relative path; identical duplicates are merged."""
    files: dict[str, Path] = {}
    for node_index in node_indices:
        output = layout.node_folders(node_index).output
        if not output.is_dir():
            continue
        for path in sorted(output.rglob("*")):
            if not path.is_file():
                continue
            relative = path.relative_to(output).as_posix()
            earlier = files.get(relative)
            if earlier is None:
                files[relative] = path
            elif file_checksum(earlier) != file_checksum(path):
                raise AirflowFailException(
                    f"nodes wrote different content to OUTPUT/{relative} "
                    f"({earlier} and {path}); write the model from one rank only"
                )
    return files


def _describe(plan: RunPlan, version: ModelVersion) -> dict[str, Any]:
    return {
        "repository": plan.output_repository,
        "version": version.version,
        "object_prefix": version.object_prefix,
        "files": version.file_count,
        "size_bytes": version.size_bytes,
    }
