"""``archive_model``: the run's OUTPUT becomes the next version of the output repository.

Only after every node succeeded (trigger rule ``all_success`` on the launches). The files are
uploaded under a staging prefix first; the version row and the final prefix are written
together, and any failure removes both, so a failed archive leaves no visible version and no
orphan objects. Nodes' OUTPUT folders are merged (a shared output location, as on the original
platform); two nodes writing different content to the same path is an error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from hooks.catalog import default_catalog
from hooks.object_store import default_object_store, file_digest
from octotrain.catalog.models import (
    ModelVersion,
    ModelVersionInput,
    ModelVersionSource,
    ModelVersionStatus,
    Run,
    RunState,
)
from octotrain.metrics import final_values
from octotrain.planning import RunPlan
from octotrain.run_layout import RunLayout, model_staging_prefix, model_version_prefix
from octotrain.storage import ObjectStore
from operators.training_stage import TrainingStageOperator

VERSION_NUMBER_ATTEMPTS = 5


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
        files = merged_outputs(layout, plan.node_indices)
        if not files:
            raise AirflowFailException(
                "no model files were written to OUTPUT by any node; nothing to archive"
            )
        store = default_object_store()
        staging = model_staging_prefix(plan.project, plan.output_repository, plan.run_key)
        try:
            for relative, path in files.items():
                store.put_file(f"{staging}/{relative}", path)
            version = self._commit(store, plan, layout, staging, files)
        finally:
            store.delete_prefix(staging)
        self.log.info("archived %s version %s", plan.output_repository, version["version"])
        return version

    def _commit(
        self,
        store: ObjectStore,
        plan: RunPlan,
        layout: RunLayout,
        staging: str,
        files: dict[str, Path],
    ) -> dict[str, Any]:
        lineage = plan.lineage | {
            "metrics": final_values(layout.node_folders(plan.node_indices[0]).metrics),
            "archived_at": datetime.now(UTC).isoformat(),
        }
        for _attempt in range(VERSION_NUMBER_ATTEMPTS):
            final = ""
            try:
                with default_catalog().session() as session:
                    number = 1 + (
                        session.scalar(
                            select(func.max(ModelVersion.version)).where(
                                ModelVersion.repository_id == plan.output_repository_id
                            )
                        )
                        or 0
                    )
                    final = model_version_prefix(plan.project, plan.output_repository, number)
                    version = ModelVersion(
                        repository_id=plan.output_repository_id,
                        version=number,
                        status=ModelVersionStatus.COMPLETE,
                        source=ModelVersionSource.TRAINING,
                        object_prefix=final,
                        size_bytes=sum(path.stat().st_size for path in files.values()),
                        file_count=len(files),
                        lineage=lineage,
                    )
                    version.inputs = lineage_edges(plan)
                    session.add(version)
                    session.flush()
                    store.copy_prefix(staging, final)
                    run = session.get(Run, plan.catalog_run_id)
                    if run is not None:
                        run.state = RunState.SUCCESS
                        run.model_version_id = version.id
                        run.ended_at = datetime.now(UTC)
                    return _describe(plan, version)
            except IntegrityError:
                # Another run of the same repository took this number first: take the next.
                continue
            except BaseException:
                if final:
                    store.delete_prefix(final)
                raise
        raise AirflowFailException(
            f"could not take a version number in {plan.output_repository} "
            f"after {VERSION_NUMBER_ATTEMPTS} attempts"
        )


def lineage_edges(plan: RunPlan) -> list[ModelVersionInput]:
    """The dataset versions (directly or through a cache) and input model versions the run
    trained from, as the relational half of lineage."""
    edges = [
        ModelVersionInput(
            dataset_version_id=item.dataset_version_id,
            via="dataset" if item.kind == "dataset" else f"cache:{item.name}",
        )
        for item in plan.data_inputs
        if item.dataset_version_id is not None
    ]
    edges += [
        ModelVersionInput(input_model_version_id=item.model_version_id, via="model")
        for item in plan.input_models
        if item.model_version_id is not None
    ]
    return edges


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
            elif file_digest(earlier) != file_digest(path):
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
