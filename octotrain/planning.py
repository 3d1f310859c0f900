"""Turn a saved training task into a run plan, checking every catalog reference on the way.

The ``validate`` stage of every run calls this, so a task whose algorithm, dataset version or
model repository has disappeared since it was saved fails before anything is staged, with all
the missing names in one message.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import select
from sqlalchemy.orm import Session

from octotrain.catalog.models import (
    Algorithm,
    AlgorithmType,
    AnnotationStatus,
    CacheStatus,
    DataCache,
    Dataset,
    DatasetVersion,
    DatasetVersionStatus,
    ModelRepository,
    ModelVersion,
    ModelVersionStatus,
    Project,
    ResourceSpec,
    SpecKind,
    TrainingTask,
)
from octotrain.contracts import node_indices
from octotrain.errors import FieldProblem, TaskDefinitionError
from octotrain.task_spec import CacheRef, DatasetVersionRef, TaskSpec, parse_task_spec

USABLE_VERSION_STATUSES = (
    DatasetVersionStatus.PUBLISHED,
    DatasetVersionStatus.IMPORTED_AWAITING_RELEASE,
)
USABLE_CACHE_STATUSES = (CacheStatus.CACHED, CacheStatus.EXPIRED)
MODELARTS_DEFAULT_USER = "ma-user"


class StagedInput(BaseModel):
    """One object-store prefix that a node receives as a folder named ``name``."""

    model_config = ConfigDict(frozen=True)

    name: str
    object_prefix: str
    kind: Literal["dataset", "cache", "model"]


class RunPlan(BaseModel):
    """Everything the stages of one run need, resolved once by ``validate``."""

    model_config = ConfigDict(frozen=True)

    task_id: int
    task_name: str
    project: str
    run_id: str
    run_key: str
    catalog_run_id: int = 0
    node_indices: list[str]
    master_addr: str
    master_port: int
    image: str
    command: list[str]
    parameters: dict[str, Any]
    env: dict[str, str]
    run_as_user: str
    data_inputs: list[StagedInput]
    input_models: list[StagedInput]
    mounts: list[StagedInput]
    output_repository_id: int
    output_repository: str
    lineage: dict[str, Any]

    @property
    def world_size(self) -> int:
        return len(self.node_indices)


def run_key(run_id: str) -> str:
    """A folder- and object-key-safe name for an Airflow run id, unique per run id."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", run_id).strip("_")[:80]
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:8]
    return f"{readable}-{digest}"


class _Resolver:
    """Collects every broken reference instead of stopping at the first."""

    def __init__(self, session: Session, spec: TaskSpec) -> None:
        self.session = session
        self.spec = spec
        self.problems: list[FieldProblem] = []

    def fail(self, field: str, rule: str) -> None:
        self.problems.append(FieldProblem(field, rule))

    def one(self, statement: Any) -> Any:
        return self.session.scalars(statement).one_or_none()

    def project(self) -> Project | None:
        project = self.one(select(Project).where(Project.name == self.spec.project))
        if project is None:
            self.fail("project", f"project '{self.spec.project}' does not exist")
        return project

    def resource_spec(self, project: Project) -> ResourceSpec | None:
        spec = self.one(
            select(ResourceSpec).where(
                ResourceSpec.project_id == project.id,
                ResourceSpec.name == self.spec.resource_spec,
            )
        )
        if spec is None:
            self.fail(
                "resource_spec",
                f"resource spec '{self.spec.resource_spec}' is not available in project "
                f"'{project.name}'",
            )
        elif self.spec.node_count > spec.max_nodes:
            self.fail(
                "node_count",
                f"must be at most {spec.max_nodes} for resource spec '{spec.name}', "
                f"got {self.spec.node_count}",
            )
        return spec

    def algorithm(self, project: Project) -> Algorithm | None:
        algorithm = self.one(
            select(Algorithm).where(
                Algorithm.project_id == project.id, Algorithm.name == self.spec.algorithm
            )
        )
        if algorithm is None:
            self.fail("algorithm", f"algorithm '{self.spec.algorithm}' does not exist")
        return algorithm

    def parameters(self, algorithm: Algorithm) -> dict[str, Any]:
        declared = {item["name"]: item for item in algorithm.parameters}
        for name in self.spec.parameters:
            if name not in declared:
                self.fail(
                    f"parameters.{name}",
                    f"algorithm '{algorithm.name}' has no parameter '{name}'",
                )
        resolved: dict[str, Any] = {}
        for name, declaration in declared.items():
            value = self.spec.parameters.get(name, declaration.get("default"))
            if value is None:
                continue
            problem = parameter_problem(declaration, value)
            if problem:
                self.fail(f"parameters.{name}", problem)
            resolved[name] = value
        return resolved

    def env(self, algorithm: Algorithm) -> dict[str, str]:
        for name in self.spec.env:
            if name not in algorithm.env:
                self.fail(
                    f"env.{name}",
                    f"algorithm '{algorithm.name}' has no environment variable '{name}'",
                )
        return {name: str(value) for name, value in algorithm.env.items()} | dict(self.spec.env)

    def dataset_version(
        self, project: Project, ref: DatasetVersionRef, field: str, algorithm: Algorithm | None
    ) -> DatasetVersion | None:
        dataset = self.one(
            select(Dataset).where(Dataset.project_id == project.id, Dataset.name == ref.dataset)
        )
        if dataset is None:
            self.fail(field, f"dataset '{ref.dataset}' does not exist")
            return None
        version = self.one(
            select(DatasetVersion).where(
                DatasetVersion.dataset_id == dataset.id, DatasetVersion.version == ref.version
            )
        )
        if version is None:
            self.fail(field, f"dataset version '{ref.dataset}' {ref.version} does not exist")
            return None
        if version.status not in USABLE_VERSION_STATUSES:
            self.fail(
                field,
                f"dataset version '{ref.dataset}' {ref.version} is {version.status}; "
                "it must be published or imported awaiting release",
            )
        if dataset.annotation_status != AnnotationStatus.ANNOTATED:
            self.fail(
                field,
                f"dataset '{ref.dataset}' is {dataset.annotation_status}; it must be annotated",
            )
        if algorithm is not None and dataset.sample_type != algorithm.sample_type:
            self.fail(
                field,
                f"dataset '{ref.dataset}' holds {dataset.sample_type} samples but algorithm "
                f"'{algorithm.name}' needs {algorithm.sample_type}",
            )
        return version

    def cache(self, project: Project, ref: CacheRef, field: str) -> DataCache | None:
        cache = self.one(
            select(DataCache).where(DataCache.project_id == project.id, DataCache.name == ref.cache)
        )
        if cache is None:
            self.fail(field, f"data cache '{ref.cache}' does not exist")
        elif cache.status not in USABLE_CACHE_STATUSES:
            self.fail(
                field,
                f"data cache '{ref.cache}' is {cache.status}; it must be cached or expired",
            )
        return cache

    def model_repository(self, project: Project) -> ModelRepository | None:
        repository = self.one(
            select(ModelRepository).where(
                ModelRepository.project_id == project.id,
                ModelRepository.name == self.spec.model_repository,
            )
        )
        if repository is None:
            self.fail(
                "model_repository",
                f"model repository '{self.spec.model_repository}' does not exist",
            )
        return repository

    def input_models(self, project: Project) -> list[StagedInput]:
        staged = []
        for position, ref in enumerate(self.spec.input_models):
            field = f"input_models.{position}"
            version = self.one(
                select(ModelVersion)
                .join(ModelRepository)
                .where(
                    ModelRepository.project_id == project.id,
                    ModelRepository.name == ref.repository,
                    ModelVersion.version == ref.version,
                )
            )
            if version is None:
                self.fail(field, f"model version '{ref.repository}' {ref.version} does not exist")
            elif version.status != ModelVersionStatus.COMPLETE:
                self.fail(field, f"model version '{ref.repository}' {ref.version} is not complete")
            else:
                staged.append(
                    StagedInput(name=ref.label, object_prefix=version.object_prefix, kind="model")
                )
        return staged


def parameter_problem(declaration: dict[str, Any], value: Any) -> str | None:
    """Why ``value`` does not fit a declared algorithm parameter, or None if it does."""
    kind = declaration.get("type", "string")
    checks = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
        "enum": lambda v: v in declaration.get("choices", []),
    }
    if kind not in checks:
        return f"has unknown type '{kind}'"
    if not checks[kind](value):
        if kind == "enum":
            return f"must be one of {declaration.get('choices', [])}, got {value!r}"
        return f"must be of type {kind}, got {value!r}"
    if kind in ("int", "float"):
        low, high = declaration.get("min"), declaration.get("max")
        if (low is not None and value < low) or (high is not None and value > high):
            return f"must be within [{low}, {high}], got {value}"
    return None


@dataclass(frozen=True)
class ResolvedTask:
    """A task document with every reference it names found in the catalog."""

    project: Project
    resource_spec: ResourceSpec
    algorithm: Algorithm
    repository: ModelRepository
    parameters: dict[str, Any]
    env: dict[str, str]
    data_inputs: list[StagedInput]
    mounts: list[StagedInput]
    input_models: list[StagedInput]
    data_lineage: list[dict[str, Any]]

    @property
    def run_as_user(self) -> str:
        """``ma-user`` for image-only algorithms on ModelArts specs (the manual), else the uid."""
        if (
            self.algorithm.algorithm_type == AlgorithmType.IMAGE_ONLY
            and self.resource_spec.kind == SpecKind.MODELARTS
        ):
            return MODELARTS_DEFAULT_USER
        return ""


def resolve_task_spec(session: Session, spec: TaskSpec) -> ResolvedTask:
    """Find everything ``spec`` names; raise with every broken reference at once."""
    resolver = _Resolver(session, spec)
    project = resolver.project()
    if project is None:
        raise TaskDefinitionError(resolver.problems)
    resource_spec = resolver.resource_spec(project)
    algorithm = resolver.algorithm(project)
    repository = resolver.model_repository(project)
    parameters = resolver.parameters(algorithm) if algorithm else {}
    env = resolver.env(algorithm) if algorithm else {}

    data_inputs: list[StagedInput] = []
    data_lineage: list[dict[str, Any]] = []
    for position, ref in enumerate(spec.data_inputs):
        field = f"data_inputs.{position}"
        if isinstance(ref, DatasetVersionRef):
            version = resolver.dataset_version(project, ref, field, algorithm)
            if version is not None:
                data_inputs.append(
                    StagedInput(name=ref.label, object_prefix=version.object_prefix, kind="dataset")
                )
                data_lineage.append(
                    {
                        "dataset": ref.dataset,
                        "version": ref.version,
                        "dataset_version_id": version.id,
                    }
                )
        else:
            cache = resolver.cache(project, ref, field)
            if cache is not None:
                data_inputs.append(
                    StagedInput(name=ref.label, object_prefix=cache.object_prefix, kind="cache")
                )
                data_lineage.append({"cache": ref.cache, "cache_id": cache.id})

    mounts: list[StagedInput] = []
    if spec.mounts and resource_spec is not None and resource_spec.kind != SpecKind.MODELARTS:
        resolver.fail("mounts", "resource mounts need a ModelArts-type resource spec")
    for position, ref in enumerate(spec.mounts):
        version = resolver.dataset_version(project, ref, f"mounts.{position}", algorithm)
        if version is not None:
            mounts.append(
                StagedInput(name=ref.label, object_prefix=version.object_prefix, kind="dataset")
            )
    input_models = resolver.input_models(project)

    if resolver.problems:
        raise TaskDefinitionError(resolver.problems)
    assert resource_spec is not None and algorithm is not None and repository is not None
    return ResolvedTask(
        project=project,
        resource_spec=resource_spec,
        algorithm=algorithm,
        repository=repository,
        parameters=parameters,
        env=env,
        data_inputs=data_inputs,
        mounts=mounts,
        input_models=input_models,
        data_lineage=data_lineage,
    )


def build_run_plan(
    session: Session,
    task: TrainingTask,
    *,
    run_id: str,
    master_addr: str,
    master_port: int,
    triggered_by: str,
) -> RunPlan:
    """Resolve ``task`` against the catalog as it is now; raise with every broken reference."""
    spec = parse_task_spec(task.spec)
    resolved = resolve_task_spec(session, spec)
    algorithm = resolved.algorithm
    return RunPlan(
        task_id=task.id,
        task_name=task.name,
        project=resolved.project.name,
        run_id=run_id,
        run_key=run_key(run_id),
        node_indices=node_indices(spec.node_count),
        master_addr=master_addr,
        master_port=master_port,
        image=algorithm.image,
        command=[str(part) for part in algorithm.command],
        parameters=resolved.parameters,
        env=resolved.env,
        run_as_user=resolved.run_as_user or str(spec.run_as_uid),
        data_inputs=resolved.data_inputs,
        input_models=resolved.input_models,
        mounts=resolved.mounts,
        output_repository_id=resolved.repository.id,
        output_repository=resolved.repository.name,
        lineage={
            "task": {"id": task.id, "name": task.name},
            "run_id": run_id,
            "triggered_by": triggered_by,
            "algorithm": {"name": algorithm.name, "image": algorithm.image},
            "parameters": resolved.parameters,
            "resource_spec": resolved.resource_spec.name,
            "node_count": spec.node_count,
            "data_inputs": resolved.data_lineage,
            "input_models": [ref.model_dump() for ref in spec.input_models],
        },
    )
