"""How catalog objects are shown: the REST API's responses and the CLI's ``--json`` output.

Each view carries the object's document fields (what a user can write back) plus what the
platform adds (project, sizes, statuses, times). Views only describe rows, they do not judge
them: the rules were applied when the rows were written.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from octotrain.catalog.models import (
    Algorithm,
    AlgorithmCode,
    DataCache,
    Dataset,
    DatasetVersion,
    ModelRepository,
    ModelVersion,
    ModelVersionInput,
    Project,
    ResourceSpec,
    Run,
    TrainingTask,
    as_utc,
)
from octotrain.contracts import dag_id_for
from octotrain.planning import recorded_plan
from octotrain.schedules import next_fire


class Unread:
    """Not read yet: the last run of a task that a list did not read with it."""


UNREAD = Unread()


class View(BaseModel):
    model_config = ConfigDict(frozen=True)


class ProjectView(View):
    name: str
    description: str
    max_nodes: int
    members: list[str]
    created_at: datetime

    @classmethod
    def of(cls, row: Project) -> ProjectView:
        return cls(
            name=row.name,
            description=row.description,
            max_nodes=row.max_nodes,
            members=[member.username for member in row.members],
            created_at=as_utc(row.created_at),
        )


class ResourceSpecView(View):
    project: str
    name: str
    kind: str
    cpu: float
    memory_mib: int
    gpu_count: int
    gpu_type: str
    max_nodes: int
    mount_volume: str

    @classmethod
    def of(cls, row: ResourceSpec) -> ResourceSpecView:
        return cls(
            project=row.project.name,
            name=row.name,
            kind=str(row.kind),
            cpu=row.cpu,
            memory_mib=row.memory_mib,
            gpu_count=row.gpu_count,
            gpu_type=row.gpu_type,
            max_nodes=row.max_nodes,
            mount_volume=row.mount_volume,
        )


class AlgorithmCodeView(View):
    """One uploaded version of an algorithm's code folder."""

    algorithm: str
    version: int
    file_count: int
    size_bytes: int
    # Over the manifest: the same files give the same digest (it is in each model's lineage).
    content_digest: str
    uploaded_by: str
    created_at: datetime

    @classmethod
    def of(cls, row: AlgorithmCode) -> AlgorithmCodeView:
        return cls(
            algorithm=row.algorithm.name,
            version=row.version,
            file_count=row.file_count,
            size_bytes=row.size_bytes,
            content_digest=row.content_digest,
            uploaded_by=row.uploaded_by,
            created_at=as_utc(row.created_at),
        )


class StoredFileView(View):
    path: str
    size_bytes: int


class AlgorithmCodeFilesView(AlgorithmCodeView):
    """A code version with its files (each one downloads from ``…/files/<path>``)."""

    files: list[StoredFileView]

    @classmethod
    def of(cls, row: AlgorithmCode) -> AlgorithmCodeFilesView:
        return cls(
            **AlgorithmCodeView.of(row).model_dump(),
            files=[
                StoredFileView(path=path, size_bytes=int(entry["size"]))
                for path, entry in sorted(row.manifest.items())
            ],
        )


class AlgorithmView(View):
    project: str
    name: str
    description: str
    algorithm_type: str
    image: str
    command: list[str]
    parameters: list[dict[str, Any]]
    env: dict[str, str]
    sample_type: str
    metric_definitions: list[dict[str, Any]]
    # Its uploaded code, oldest first (empty: the command runs what the image holds).
    code_versions: list[AlgorithmCodeView]
    created_at: datetime

    @classmethod
    def of(cls, row: Algorithm) -> AlgorithmView:
        return cls(
            project=row.project.name,
            name=row.name,
            description=row.description,
            algorithm_type=str(row.algorithm_type),
            image=row.image,
            command=[str(part) for part in row.command],
            parameters=list(row.parameters),
            env={name: str(value) for name, value in row.env.items()},
            sample_type=row.sample_type,
            metric_definitions=list(row.metric_definitions or []),
            code_versions=[AlgorithmCodeView.of(version) for version in row.code_versions],
            created_at=as_utc(row.created_at),
        )


def _made(edges: list[ModelVersionInput]) -> list[dict[str, Any]]:
    """The model versions at the far end of lineage edges."""
    return [
        {
            "repository": edge.model_version.repository.name,
            "version": edge.model_version.version,
            "via": edge.via,
        }
        for edge in edges
    ]


def _made_from(edge: ModelVersionInput) -> dict[str, Any]:
    if edge.dataset_version is not None:
        found = edge.dataset_version
        return {"dataset": found.dataset.name, "version": found.version, "via": edge.via}
    model = edge.input_model_version
    assert model is not None
    return {"repository": model.repository.name, "version": model.version, "via": edge.via}


class DatasetVersionView(View):
    dataset: str
    version: str
    status: str
    size_bytes: int
    file_count: int
    content_digest: str
    # Lineage the other way: the model versions trained from this version.
    produced: list[dict[str, Any]]
    created_at: datetime

    @classmethod
    def of(cls, row: DatasetVersion) -> DatasetVersionView:
        return cls(
            dataset=row.dataset.name,
            version=row.version,
            status=str(row.status),
            size_bytes=row.size_bytes,
            file_count=row.file_count,
            content_digest=row.content_digest,
            produced=_made(row.produced),
            created_at=as_utc(row.created_at),
        )


class DatasetView(View):
    project: str
    name: str
    sample_type: str
    annotation_status: str
    versions: list[DatasetVersionView]
    created_at: datetime

    @classmethod
    def of(cls, row: Dataset) -> DatasetView:
        return cls(
            project=row.project.name,
            name=row.name,
            sample_type=row.sample_type,
            annotation_status=str(row.annotation_status),
            versions=[DatasetVersionView.of(version) for version in row.versions],
            created_at=as_utc(row.created_at),
        )


class DataCacheView(View):
    project: str
    name: str
    dataset: str
    version: str
    status: str
    size_bytes: int
    file_count: int
    ttl_hours: int
    expires_at: datetime | None
    refresh_requested: bool
    # Why the last copy failed, if it did.
    message: str
    created_at: datetime

    @classmethod
    def of(cls, row: DataCache) -> DataCacheView:
        return cls(
            project=row.project.name,
            name=row.name,
            dataset=row.dataset_version.dataset.name,
            version=row.dataset_version.version,
            status=str(row.current_status()),
            size_bytes=row.size_bytes,
            file_count=row.file_count,
            ttl_hours=row.ttl_hours,
            expires_at=as_utc(row.expires_at) if row.expires_at else None,
            refresh_requested=row.refresh_requested,
            message=row.message,
            created_at=as_utc(row.created_at),
        )


class RunRef(View):
    """A run where another object names it: its catalog id (shown "#23") and task, and when
    it started."""

    id: int
    task_id: int
    started_at: datetime

    @classmethod
    def of(cls, row: Run) -> RunRef:
        return cls(id=row.id, task_id=row.task_id, started_at=as_utc(row.started_at))


class ModelVersionView(View):
    repository: str
    version: int
    status: str
    source: str
    description: str
    size_bytes: int
    file_count: int
    content_digest: str
    lineage: dict[str, Any]
    # What it was trained from (dataset versions, directly or through a cache, and input
    # model versions) and, the other way, the versions trained from it.
    inputs: list[dict[str, Any]]
    produced: list[dict[str, Any]]
    created_at: datetime
    # The run that made it, as runs are named everywhere ("#23", started at …): null for an
    # imported version, or once that run was deleted.
    run: RunRef | None = None

    @classmethod
    def of(cls, row: ModelVersion) -> ModelVersionView:
        return cls(
            repository=row.repository.name,
            version=row.version,
            status=str(row.status),
            source=str(row.source),
            description=row.description,
            size_bytes=row.size_bytes,
            file_count=row.file_count,
            content_digest=row.content_digest,
            lineage=row.lineage,
            inputs=[_made_from(edge) for edge in row.inputs],
            produced=_made(row.produced),
            created_at=as_utc(row.created_at),
            run=RunRef.of(row.made_by) if row.made_by is not None else None,
        )


class ModelRepositoryView(View):
    project: str
    name: str
    description: str
    versions: list[int]
    created_at: datetime

    @classmethod
    def of(cls, row: ModelRepository) -> ModelRepositoryView:
        return cls(
            project=row.project.name,
            name=row.name,
            description=row.description,
            versions=[version.version for version in row.versions],
            created_at=as_utc(row.created_at),
        )


class RunView(View):
    id: int
    airflow_run_id: str
    state: str
    node_count: int
    message: str
    triggered_by: str
    trigger: str
    started_at: datetime
    ended_at: datetime | None
    model_version: int | None
    # The run (catalog id) whose checkpoint this one resumes from, if any.
    resumed_from: int | None
    # The algorithm's parameters the run was launched with (defaults and its conf applied,
    # secrets masked); empty until ``validate`` has planned it.
    parameters: dict[str, Any]
    # Whether it can be resumed now (failed or stopped, with a checkpoint in the store): set by
    # the routes that show one run or a task's runs; null where it was not looked up.
    resumable: bool | None = None
    # A sweep's trial: the sweep (its id) and the trial's number in it; null for other runs.
    sweep: int | None = None
    trial: int | None = None

    @classmethod
    def of(cls, row: Run) -> RunView:
        return cls(
            id=row.id,
            airflow_run_id=row.airflow_run_id,
            state=str(row.state),
            node_count=row.node_count,
            message=row.message,
            triggered_by=row.triggered_by,
            trigger=row.trigger,
            started_at=as_utc(row.started_at),
            ended_at=as_utc(row.ended_at) if row.ended_at else None,
            model_version=row.model_version.version if row.model_version else None,
            resumed_from=row.resumed_from_id,
            parameters=dict(plan.parameters) if (plan := recorded_plan(row)) else {},
            sweep=row.sweep_id,
            trial=row.trial_number,
        )


class TaskView(View):
    """A training task: its document as saved, and what the platform derived from it."""

    id: int
    project: str
    name: str
    description: str
    dag_id: str
    node_count: int
    priority: int
    resource_spec: str
    algorithm: str
    # The algorithm's code version its runs stage into CODE (None: no uploaded code).
    code_version: int | None
    model_repository: str
    # The user the container starts as: "ma-user" (image-only algorithm on a ModelArts spec)
    # or the task's uid.
    container_user: str
    # Scheduled retraining: the cron schedule (UTC) and when it next fires, and the datasets
    # whose next published version starts a run.
    schedule: str | None
    next_scheduled_run: datetime | None
    retrain_on: list[str]
    document: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    last_run: RunView | None

    @classmethod
    def of(cls, row: TrainingTask, *, last_run: Run | Unread | None = UNREAD) -> TaskView:
        """The view of ``row``; ``last_run`` when a list read it with the task (else the task's
        runs are read for it)."""
        spec = row.document
        if isinstance(last_run, Unread):
            last_run = row.runs[-1] if row.runs else None
        return cls(
            id=row.id,
            project=row.project.name,
            name=row.name,
            description=row.description,
            dag_id=dag_id_for(row.id),
            node_count=spec.node_count,
            priority=spec.priority,
            resource_spec=spec.resource_spec,
            algorithm=spec.algorithm,
            code_version=spec.code_version,
            model_repository=spec.model_repository,
            container_user=row.container_user or str(spec.run_as_uid),
            schedule=spec.schedule,
            next_scheduled_run=next_fire(spec.schedule) if spec.schedule else None,
            retrain_on=list(spec.retrain_on),
            document=row.spec,
            created_at=as_utc(row.created_at),
            updated_at=as_utc(row.updated_at),
            last_run=RunView.of(last_run) if last_run is not None else None,
        )
