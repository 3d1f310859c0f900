"""What the "New training task" form may offer in a project: only the choices the task rules
accept (``octotrain.task_rules``), so that a user picks from valid options and the rules,
applied again on save, only catch what changed in between or a wrong combination.

- resource specs, with their kind (mounts are offered on ModelArts specs only) and node limit;
- algorithms, with their parameter list and variables (the form pre-fills and lets one edit);
- model repositories, and their complete versions (incremental training's inputs);
- dataset versions of annotated datasets that are published or imported awaiting release
  (the form shows those of the chosen algorithm's sample type), and cached or expired caches,
  each with its status.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from octotrain.catalog.models import (
    Algorithm,
    AnnotationStatus,
    DataCache,
    Dataset,
    ModelRepository,
    ModelVersionStatus,
    Project,
    ResourceSpec,
)
from octotrain.task_rules import USABLE_CACHE_STATUSES, USABLE_VERSION_STATUSES


def task_form_choices(session: Session, project: Project) -> dict[str, Any]:
    """The form's choices in ``project``, as JSON for the page's script."""

    def rows(model: type) -> list[Any]:
        return list(
            session.scalars(
                select(model).where(model.project_id == project.id).order_by(model.name)
            )
        )

    datasets = session.scalars(
        select(Dataset)
        .where(
            Dataset.project_id == project.id,
            Dataset.annotation_status == AnnotationStatus.ANNOTATED,
        )
        .options(selectinload(Dataset.versions))
        .order_by(Dataset.name)
    )
    repositories = session.scalars(
        select(ModelRepository)
        .where(ModelRepository.project_id == project.id)
        .options(selectinload(ModelRepository.versions))
        .order_by(ModelRepository.name)
    )
    return {
        "project": project.name,
        "max_nodes": project.max_nodes,
        "resource_specs": [
            {
                "name": spec.name,
                "kind": str(spec.kind),
                "max_nodes": spec.max_nodes,
                "cpu": spec.cpu,
                "memory_mib": spec.memory_mib,
                "gpu_count": spec.gpu_count,
            }
            for spec in rows(ResourceSpec)
        ],
        "algorithms": [
            {
                "name": algorithm.name,
                "description": algorithm.description,
                "sample_type": algorithm.sample_type,
                "parameters": list(algorithm.parameters),
                "env": {name: str(value) for name, value in algorithm.env.items()},
                # its uploaded code's versions, oldest first (a task runs one of them)
                "code_versions": [row.version for row in algorithm.code_versions],
            }
            for algorithm in rows(Algorithm)
        ],
        "model_repositories": [
            {
                "name": repository.name,
                "versions": [
                    version.version
                    for version in repository.versions
                    if version.status == ModelVersionStatus.COMPLETE
                ],
            }
            for repository in repositories
        ],
        "datasets": [
            {
                "name": dataset.name,
                "sample_type": dataset.sample_type,
                "versions": [
                    version.version
                    for version in dataset.versions
                    if version.status in USABLE_VERSION_STATUSES
                ],
                "published": any(
                    str(version.status) == "published" for version in dataset.versions
                ),
                # each offered version's status (published, or imported awaiting release),
                # shown beside it in the form
                "version_statuses": {
                    version.version: str(version.status)
                    for version in dataset.versions
                    if version.status in USABLE_VERSION_STATUSES
                },
            }
            for dataset in datasets
        ],
        "caches": [
            {"name": cache.name, "status": str(status)}
            for cache in rows(DataCache)
            if (status := cache.current_status()) in USABLE_CACHE_STATUSES
        ],
    }
