"""Who still refers to a catalog object, by name, so that deleting it, renaming it or lowering
its ``max_nodes`` below a task's node count can be refused with the names of what would break.

Training tasks name what they use in their document (so that a reference that has disappeared
is reported by name when the task runs); model versions point to the dataset versions and
model versions they were trained from through lineage edges.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from octotrain.catalog.models import (
    DataCache,
    DatasetVersion,
    ModelRepository,
    ModelVersion,
    ModelVersionInput,
    Project,
    TrainingTask,
)
from octotrain.task_spec import DataRef, TaskSpec, saved_task_spec

TaskTest = Callable[[TaskSpec], bool]


class References:
    """The referrers of objects in one project."""

    def __init__(self, session: Session, project: Project) -> None:
        self.session = session
        self.project = project

    def tasks(self, test: TaskTest) -> list[str]:
        documents = self.session.execute(
            select(TrainingTask.name, TrainingTask.spec)
            .where(TrainingTask.project_id == self.project.id)
            .order_by(TrainingTask.name)
        )
        return [f"task '{name}'" for name, spec in documents if test(saved_task_spec(spec))]

    def to_resource_spec(self, name: str) -> list[str]:
        return self.tasks(lambda spec: spec.resource_spec == name)

    def needing_more_nodes(self, limit: int, *, resource_spec: str | None = None) -> list[str]:
        """The tasks (of ``resource_spec``, or of the whole project) saved with more nodes
        than ``limit``, each with its node count: a lower ``max_nodes`` would break them."""
        counts = self.session.execute(
            select(TrainingTask.name, TrainingTask.spec)
            .where(TrainingTask.project_id == self.project.id)
            .order_by(TrainingTask.name)
        )
        return [
            f"task '{name}' ({nodes} nodes)"
            for name, document in counts
            if (nodes := (spec := saved_task_spec(document)).node_count) > limit
            and resource_spec in (None, spec.resource_spec)
        ]

    def to_algorithm(self, name: str) -> list[str]:
        return self.tasks(lambda spec: spec.algorithm == name)

    def to_dataset(self, name: str, versions: Iterable[DatasetVersion]) -> list[str]:
        by_tasks = self.tasks(lambda spec: any(ref.dataset == name for ref in _data(spec)))
        return by_tasks + [
            referrer for version in versions for referrer in self._to_version_rows(version)
        ]

    def to_dataset_version(self, version: DatasetVersion) -> list[str]:
        dataset, number = version.dataset.name, version.version
        by_tasks = self.tasks(
            lambda spec: any((ref.dataset, ref.version) == (dataset, number) for ref in _data(spec))
        )
        return by_tasks + self._to_version_rows(version)

    def _to_version_rows(self, version: DatasetVersion) -> list[str]:
        caches = self.session.scalars(
            select(DataCache.name)
            .where(DataCache.dataset_version_id == version.id)
            .order_by(DataCache.name)
        )
        made = self._model_versions(ModelVersionInput.dataset_version_id == version.id)
        return [f"data cache '{name}'" for name in caches] + made

    def to_cache(self, name: str) -> list[str]:
        return self.tasks(lambda spec: any(ref.cache == name for ref in spec.data_inputs))

    def to_repository(self, repository: ModelRepository) -> list[str]:
        name = repository.name
        by_tasks = self.tasks(
            lambda spec: (
                spec.model_repository == name
                or any(ref.repository == name for ref in spec.input_models)
            )
        )
        inside = {version.id for version in repository.versions}
        outside = [
            referrer
            for version in repository.versions
            for referrer in self.to_model_version(version, tasks=False, ignore=inside)
        ]
        return by_tasks + sorted(set(outside))

    def to_model_version(
        self, version: ModelVersion, *, tasks: bool = True, ignore: set[int] | None = None
    ) -> list[str]:
        repository, number = version.repository.name, version.version
        by_tasks = (
            self.tasks(
                lambda spec: any(
                    (ref.repository, ref.version) == (repository, number)
                    for ref in spec.input_models
                )
            )
            if tasks
            else []
        )
        condition = ModelVersionInput.input_model_version_id == version.id
        if ignore:
            condition = condition & ModelVersionInput.model_version_id.not_in(ignore)
        return by_tasks + self._model_versions(condition)

    def _model_versions(self, condition: Any) -> list[str]:
        rows = self.session.execute(
            select(ModelRepository.name, ModelVersion.version)
            .join(ModelVersion.repository)
            .join(ModelVersionInput, ModelVersionInput.model_version_id == ModelVersion.id)
            .where(condition)
            .distinct()
            .order_by(ModelRepository.name, ModelVersion.version)
        )
        return [f"model version '{name}' {number}" for name, number in rows]


def _data(spec: TaskSpec) -> list[DataRef]:
    return [*spec.data_inputs, *spec.mounts]
