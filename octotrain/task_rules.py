"""Every rule of the manual's "Creating a training task", in one place.

``check_task`` applies the document's own rules (``octotrain.task_spec``) and the rules that need
the catalog or several fields together, and reports every broken rule at once: when some fields
are invalid, the catalog rules still check the fields that are fine. The REST API, the CLI, the
UI form and the DAG's ``validate`` stage all call it, so a task is judged the same everywhere,
both when it is saved and again when it runs (the catalog may have changed in between).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session, selectinload

from octotrain.argument_limits import launch_size_problem
from octotrain.catalog.access import Scope
from octotrain.catalog.models import (
    Algorithm,
    AlgorithmType,
    AnnotationStatus,
    CacheStatus,
    DataCache,
    Dataset,
    DatasetVersionStatus,
    ModelRepository,
    ModelVersion,
    ModelVersionStatus,
    Project,
    ResourceSpec,
    SpecKind,
    TrainingTask,
)
from octotrain.contracts import parameter_arguments
from octotrain.documents import judge_document
from octotrain.errors import FieldProblem
from octotrain.parameters import parameter_problem
from octotrain.task_spec import DataRef, ModelVersionRef, TaskSpec

USABLE_VERSION_STATUSES = (
    DatasetVersionStatus.PUBLISHED,
    DatasetVersionStatus.IMPORTED_AWAITING_RELEASE,
)
USABLE_CACHE_STATUSES = (CacheStatus.CACHED, CacheStatus.EXPIRED)
MODELARTS_DEFAULT_USER = "ma-user"


class StagedInput(BaseModel):
    """One object-store prefix that a node receives as a folder named ``name``; the ids say
    which catalog row it came from (for lineage)."""

    model_config = ConfigDict(frozen=True)

    name: str
    object_prefix: str
    kind: Literal["dataset", "cache", "model", "code"]
    size_bytes: int = 0
    dataset_version_id: int | None = None
    model_version_id: int | None = None
    cache_id: int | None = None
    code_version_id: int | None = None


@dataclass(frozen=True)
class ResolvedTask:
    """A valid task document with every catalog object it names."""

    spec: TaskSpec
    project: Project
    resource_spec: ResourceSpec
    algorithm: Algorithm
    repository: ModelRepository
    parameters: dict[str, Any]
    env: dict[str, str]
    data_inputs: list[StagedInput]
    mounts: list[StagedInput]
    input_models: list[StagedInput]
    # The algorithm's code version the task runs (its CODE folder); None: no uploaded code.
    code: StagedInput | None = None

    @property
    def container_user(self) -> str:
        """``ma-user`` for image-only algorithms on ModelArts specs (the manual), else ``""``
        (the container runs as the task's uid)."""
        if (
            self.algorithm.algorithm_type == AlgorithmType.IMAGE_ONLY
            and self.resource_spec.kind == SpecKind.MODELARTS
        ):
            return MODELARTS_DEFAULT_USER
        return ""


def check_task(
    session: Session,
    scope: Scope,
    document: object,
    *,
    current: TrainingTask | None = None,
) -> ResolvedTask:
    """Judge ``document`` against every rule; ``current`` is the task it replaces, if any.

    Raises ``InvalidInput`` listing every broken rule; writes nothing.
    """
    rules = _CatalogRules(session, scope, current)
    spec = judge_document(TaskSpec, document, rules.check)
    if rules.code_version is not None and spec.code_version is None:  # newest, kept from now on
        spec = spec.model_copy(update={"code_version": rules.code_version})
    return ResolvedTask(spec=spec, **rules.resolved)


class _CatalogRules:
    """The rules that need the catalog or several fields; each checks only valid fields, so
    that they run (and report) even when other fields of the document are invalid."""

    def __init__(self, session: Session, scope: Scope, current: TrainingTask | None) -> None:
        self.session = session
        self.scope = scope
        self.current = current
        self.fields: dict[str, Any] = {}
        self.problems: list[FieldProblem] = []
        # What the document names, found in the catalog (complete only when no problem).
        self.resolved: dict[str, Any] = {}
        # The number of the code version the task runs (None: its algorithm has no code).
        self.code_version: int | None = None

    def fail(self, field: str, rule: str) -> None:
        self.problems.append(FieldProblem(field, rule))

    def check(self, fields: dict[str, Any]) -> list[FieldProblem]:
        self.fields = fields
        self.resolved = self._resolve() or {}
        return self.problems

    def _resolve(self) -> dict[str, Any] | None:
        project = self._project()
        if project is None:
            return None
        self._unique_name(project)
        spec = self._resource_spec(project)
        algorithm = self._algorithm(project)
        code = self._code(algorithm)
        repository = self._repository(project)
        parameters = self._parameters(algorithm)
        env = self._env(algorithm)
        self._launch_size(algorithm, parameters, env)
        data_inputs = self._data_inputs(project, algorithm)
        mounts = self._mounts(project, algorithm, spec)
        input_models = self._input_models(project)
        self._retrain_on(project, algorithm)
        self._distinct_folders("data_inputs", data_inputs)
        self._distinct_folders("input_models", input_models)
        self._distinct_folders("mounts", mounts)
        if spec is None or algorithm is None or repository is None:
            return None
        return {
            "project": project,
            "resource_spec": spec,
            "algorithm": algorithm,
            "repository": repository,
            "parameters": parameters,
            "env": env,
            "data_inputs": data_inputs,
            "mounts": mounts,
            "input_models": input_models,
            "code": code,
        }

    def _project(self) -> Project | None:
        name = self.fields.get("project")
        if name is None:
            return None
        if self.current is not None and self.current.project.name != name:
            self.fail("project", "cannot be changed; copy the task into the other project")
            return None
        project = self.scope.find_project(self.session, name)
        if project is None:
            self.fail("project", f"project '{name}' does not exist")
        return project

    def _unique_name(self, project: Project) -> None:
        name = self.fields.get("name")
        if name is None:
            return
        query = select(TrainingTask.id).where(
            TrainingTask.project_id == project.id, TrainingTask.name == name
        )
        if self.current is not None:
            query = query.where(TrainingTask.id != self.current.id)
        if self.session.scalar(query) is not None:
            self.fail("name", f"a task named '{name}' already exists in project '{project.name}'")

    def _named(self, model: type, project: Project, name: str | None) -> Any:
        if name is None:
            return None
        return self.session.scalars(
            select(model).where(model.project_id == project.id, model.name == name)
        ).one_or_none()

    def _resource_spec(self, project: Project) -> ResourceSpec | None:
        name = self.fields.get("resource_spec")
        spec = self._named(ResourceSpec, project, name)
        if name is not None and spec is None:
            self.fail(
                "resource_spec",
                f"resource spec '{name}' is not available in project '{project.name}'",
            )
        nodes = self.fields.get("node_count")
        if nodes is None:
            return spec
        if spec is not None and nodes > spec.max_nodes:
            self.fail(
                "node_count",
                f"must be at most {spec.max_nodes} for resource spec '{spec.name}', got {nodes}",
            )
        if nodes > project.max_nodes:
            self.fail(
                "node_count",
                f"must be at most {project.max_nodes}, the limit of project '{project.name}', "
                f"got {nodes}",
            )
        return spec

    def _algorithm(self, project: Project) -> Algorithm | None:
        name = self.fields.get("algorithm")
        algorithm = self._named(Algorithm, project, name)
        if name is not None and algorithm is None:
            self.fail("algorithm", f"algorithm '{name}' does not exist in project '{project.name}'")
        return algorithm

    def _code(self, algorithm: Algorithm | None) -> StagedInput | None:
        """The code version the task names, or the algorithm's newest when it names none."""
        if algorithm is None:
            return None
        wanted = self.fields.get("code_version")
        versions = algorithm.code_versions
        if wanted is None:
            if not versions:
                return None
            row = versions[-1]
        else:
            row = next((row for row in versions if row.version == wanted), None)
            if row is None:
                have = ", ".join(str(row.version) for row in versions)
                self.fail(
                    "code_version",
                    f"algorithm '{algorithm.name}' has no code version {wanted} "
                    + (f"(it has {have})" if have else "(no code was uploaded to it)"),
                )
                return None
        self.code_version = row.version
        return StagedInput(
            name=f"{algorithm.name} v{row.version}",
            object_prefix=row.object_prefix,
            kind="code",
            size_bytes=row.size_bytes,
            code_version_id=row.id,
        )

    def _repository(self, project: Project) -> ModelRepository | None:
        name = self.fields.get("model_repository")
        repository = self._named(ModelRepository, project, name)
        if name is not None and repository is None:
            self.fail("model_repository", f"model repository '{name}' does not exist")
        return repository

    def _parameters(self, algorithm: Algorithm | None) -> dict[str, Any]:
        given: dict[str, Any] | None = self.fields.get("parameters")
        if algorithm is None or given is None:
            return {}
        declared = {item["name"]: item for item in algorithm.parameters}
        for name in given:
            if name not in declared:
                known = ", ".join(declared) or "none"
                self.fail(
                    f"parameters.{name}",
                    f"algorithm '{algorithm.name}' has no parameter '{name}' (it has: {known})",
                )
        resolved: dict[str, Any] = {}
        for name, declaration in declared.items():
            value = given.get(name, declaration.get("default"))
            if value is None:
                if declaration.get("required"):
                    self.fail(f"parameters.{name}", "is required by the algorithm; give a value")
                continue
            problem = parameter_problem(declaration, value)
            if problem:
                self.fail(f"parameters.{name}", problem)
            resolved[name] = value
        return resolved

    def _env(self, algorithm: Algorithm | None) -> dict[str, str]:
        given: dict[str, str] | None = self.fields.get("env")
        if algorithm is None or given is None:
            return {}
        for name in given:
            if name not in algorithm.env:
                self.fail(
                    f"env.{name}",
                    f"algorithm '{algorithm.name}' has no environment variable '{name}'",
                )
        return {name: str(value) for name, value in algorithm.env.items()} | given

    def _launch_size(
        self, algorithm: Algorithm | None, parameters: dict[str, Any], env: dict[str, str]
    ) -> None:
        """The command line and variables a node starts with must fit what the kernel takes."""
        if algorithm is None:
            return
        arguments = dict(
            zip(
                (f"parameters.{name}" for name in parameters),
                parameter_arguments(parameters),
                strict=True,
            )
        )
        problem = launch_size_problem(algorithm.command, arguments, env)
        if problem is not None:
            self.problems.append(problem)

    def _datasets(self, project: Project, names: Iterable[str | None]) -> dict[str, Dataset]:
        wanted = {name for name in names if name is not None}
        if not wanted:
            return {}
        rows = self.session.scalars(
            select(Dataset)
            .where(Dataset.project_id == project.id, Dataset.name.in_(wanted))
            .options(selectinload(Dataset.versions))
        )
        return {dataset.name: dataset for dataset in rows}

    def _dataset_version(
        self,
        field: str,
        ref: DataRef,
        datasets: dict[str, Dataset],
        algorithm: Algorithm | None,
    ) -> StagedInput | None:
        dataset = datasets.get(str(ref.dataset))
        if dataset is None:
            self.fail(field, f"dataset '{ref.dataset}' does not exist")
            return None
        version = next((v for v in dataset.versions if v.version == ref.version), None)
        if version is None:
            self.fail(field, f"dataset version '{ref.dataset}' {ref.version} does not exist")
            return None
        usable = True
        if version.status not in USABLE_VERSION_STATUSES:
            usable = False
            self.fail(
                field,
                f"dataset version '{ref.dataset}' {ref.version} is {version.status}; "
                "it must be published or imported awaiting release",
            )
        if dataset.annotation_status != AnnotationStatus.ANNOTATED:
            usable = False
            self.fail(
                field,
                f"dataset '{ref.dataset}' is {dataset.annotation_status}; it must be annotated",
            )
        if algorithm is not None and dataset.sample_type != algorithm.sample_type:
            usable = False
            self.fail(
                field,
                f"dataset '{ref.dataset}' holds {dataset.sample_type} samples but algorithm "
                f"'{algorithm.name}' needs {algorithm.sample_type}",
            )
        if not usable:
            return None
        return StagedInput(
            name=ref.label,
            object_prefix=version.object_prefix,
            kind="dataset",
            size_bytes=version.size_bytes,
            dataset_version_id=version.id,
        )

    def _data_inputs(self, project: Project, algorithm: Algorithm | None) -> list[StagedInput]:
        refs: list[DataRef] | None = self.fields.get("data_inputs")
        if not refs:
            return []
        datasets = self._datasets(project, (ref.dataset for ref in refs))
        cache_names = {ref.cache for ref in refs if ref.cache is not None}
        caches = {
            cache.name: cache
            for cache in self.session.scalars(
                select(DataCache)
                .where(DataCache.project_id == project.id, DataCache.name.in_(cache_names))
                .options(selectinload(DataCache.dataset_version))
            )
        }
        staged = []
        for position, ref in enumerate(refs):
            field = f"data_inputs.{position}"
            item = (
                self._cache(field, ref, caches)
                if ref.is_cache
                else self._dataset_version(field, ref, datasets, algorithm)
            )
            if item is not None:
                staged.append(item)
        return staged

    def _cache(self, field: str, ref: DataRef, caches: dict[str, DataCache]) -> StagedInput | None:
        cache = caches.get(str(ref.cache))
        if cache is None:
            self.fail(field, f"data cache '{ref.cache}' does not exist")
            return None
        status = cache.current_status()
        if status not in USABLE_CACHE_STATUSES:
            self.fail(field, f"data cache '{ref.cache}' is {status}; it must be cached or expired")
            return None
        return StagedInput(
            name=ref.label,
            object_prefix=cache.object_prefix,
            kind="cache",
            size_bytes=cache.size_bytes,
            dataset_version_id=cache.dataset_version_id,
            cache_id=cache.id,
        )

    def _mounts(
        self, project: Project, algorithm: Algorithm | None, spec: ResourceSpec | None
    ) -> list[StagedInput]:
        refs: list[DataRef] | None = self.fields.get("mounts")
        if not refs:
            return []
        if spec is not None and spec.kind != SpecKind.MODELARTS:
            self.fail(
                "mounts",
                f"resource mounts need a ModelArts-type resource spec; '{spec.name}' is "
                f"{spec.kind}",
            )
        datasets = self._datasets(project, (ref.dataset for ref in refs))
        staged = []
        for position, ref in enumerate(refs):
            field = f"mounts.{position}"
            if ref.is_cache:
                self.fail(field, f"only datasets can be mounted, not data cache '{ref.cache}'")
                continue
            item = self._dataset_version(field, ref, datasets, algorithm)
            if item is not None:
                staged.append(item)
        return staged

    def _input_models(self, project: Project) -> list[StagedInput]:
        kind = self.fields.get("training_kind")
        refs: list[ModelVersionRef] | None = self.fields.get("input_models")
        if refs is None or kind is None:
            return []
        if kind == "incremental" and not refs:
            self.fail("input_models", "incremental training needs 1-10 input model versions")
        if kind == "regular" and refs:
            self.fail(
                "input_models",
                "input models are only for incremental training; set training_kind to incremental",
            )
        if not refs:
            return []
        rows = self.session.execute(
            select(ModelRepository.name, ModelVersion)
            .join(ModelVersion.repository)
            .where(
                ModelRepository.project_id == project.id,
                tuple_(ModelRepository.name, ModelVersion.version).in_(
                    [(ref.repository, ref.version) for ref in refs]
                ),
            )
        ).all()
        versions = {(name, version.version): version for name, version in rows}
        staged = []
        for position, ref in enumerate(refs):
            field = f"input_models.{position}"
            version = versions.get((ref.repository, ref.version))
            if version is None:
                self.fail(field, f"model version '{ref.repository}' {ref.version} does not exist")
            elif version.status != ModelVersionStatus.COMPLETE:
                self.fail(
                    field,
                    f"model version '{ref.repository}' {ref.version} is {version.status}; "
                    "it must be complete",
                )
            else:
                staged.append(
                    StagedInput(
                        name=ref.label,
                        object_prefix=version.object_prefix,
                        kind="model",
                        size_bytes=version.size_bytes,
                        model_version_id=version.id,
                    )
                )
        return staged

    def _retrain_on(self, project: Project, algorithm: Algorithm | None) -> None:
        """A dataset can start runs only if it is one of the task's data inputs (whose version
        the run replaces by the newest published one), annotated, of the algorithm's sample
        type, and already has a published version."""
        names: list[str] | None = self.fields.get("retrain_on")
        if not names:
            return
        refs: list[DataRef] = self.fields.get("data_inputs") or []
        inputs = {ref.dataset for ref in refs if ref.dataset is not None}
        datasets = self._datasets(project, names)
        for position, name in enumerate(names):
            field = f"retrain_on.{position}"
            dataset = datasets.get(name)
            if name in names[:position]:
                self.fail(field, f"dataset '{name}' is listed twice")
            elif dataset is None:
                self.fail(field, f"dataset '{name}' does not exist")
            elif "data_inputs" in self.fields and name not in inputs:
                self.fail(
                    field,
                    f"dataset '{name}' is not one of the task's data inputs; retraining "
                    "replaces a data input's version by the newest published one",
                )
            elif dataset.annotation_status != AnnotationStatus.ANNOTATED:
                self.fail(
                    field,
                    f"dataset '{name}' is {dataset.annotation_status}; it must be annotated",
                )
            elif algorithm is not None and dataset.sample_type != algorithm.sample_type:
                self.fail(
                    field,
                    f"dataset '{name}' holds {dataset.sample_type} samples but algorithm "
                    f"'{algorithm.name}' needs {algorithm.sample_type}",
                )
            elif not any(v.status == DatasetVersionStatus.PUBLISHED for v in dataset.versions):
                self.fail(
                    field,
                    f"dataset '{name}' has no published version, so it cannot trigger "
                    "retraining; publish a version first",
                )

    def _distinct_folders(self, field: str, items: list[StagedInput]) -> None:
        """Each input becomes a folder named by its label: two inputs cannot share one."""
        seen: set[str] = set()
        for item in items:
            if item.name in seen:
                self.fail(field, f"'{item.name}' is listed twice (each input is one folder)")
            seen.add(item.name)
