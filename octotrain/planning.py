"""Turn a saved training task into a run plan, checking every catalog reference on the way.

The ``validate`` stage of every run calls this, so a task whose algorithm, dataset version or
model repository has disappeared since it was saved fails before anything is staged, with all
the missing names in one message.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import select
from sqlalchemy.orm import Session

from octotrain.catalog.access import Scope
from octotrain.catalog.models import (
    Algorithm,
    Dataset,
    DatasetVersion,
    DatasetVersionStatus,
    Run,
    TrainingTask,
)
from octotrain.contracts import node_indices
from octotrain.metric_definitions import MetricDefinition
from octotrain.resume import run_to_resume
from octotrain.run_layout import RunObjects
from octotrain.run_settings import RESUME_SETTING, with_run_settings
from octotrain.secrets import is_sensitive, masked
from octotrain.task_rules import ResolvedTask, StagedInput, check_task

# The catalog's own identity when a run re-checks its task (runs are not user requests).
PLANNER = Scope.administrator("octotrain-planner")


class NodeResources(BaseModel):
    """The resource spec a run's nodes get (what a pod requests, what a process may use)."""

    model_config = ConfigDict(frozen=True)

    spec: str
    kind: str
    cpu: float
    memory_mib: int
    gpu_count: int
    gpu_type: str = ""
    mount_volume: str = ""


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
    # The uid the container runs as, unless ``container_user`` is set ("ma-user": the image's
    # own default user, for image-only algorithms on ModelArts specs).
    run_as_uid: int = 1000
    container_user: str = ""
    priority: int = 0
    resources: NodeResources | None = None
    data_inputs: list[StagedInput]
    input_models: list[StagedInput]
    mounts: list[StagedInput]
    # The algorithm's code version, staged into every node's CODE (the command runs there).
    code: StagedInput | None = None
    output_repository_id: int
    output_repository: str
    # Whether a run that writes no model fails (``TaskSpec.model_required``).
    model_required: bool = True
    lineage: dict[str, Any]
    # The earlier run of the task this one resumes (its catalog id and run key), if any.
    resumed_from_run_id: int = 0
    resumed_run_key: str = ""
    # Time limits in seconds (octotrain.time_limits); None: none.
    max_wait_seconds: int | None = None
    max_training_seconds: int | None = None
    # Hang detection (octotrain.hang_detection): the silence after which a node counts as hung
    # (None: not watched), and whether it is then stopped.
    hang_after_seconds: int | None = None
    stop_when_hung: bool = False
    # Restarts of the run's nodes after a node was lost (octotrain.restarts); 0: none.
    max_node_restarts: int = 0
    # The algorithm's metric definitions as the node's wrapper applies them to the train log
    # (``MetricDefinition.extraction``); empty: none.
    metric_extraction: list[dict[str, Any]] = []

    @property
    def world_size(self) -> int:
        return len(self.node_indices)

    @property
    def objects(self) -> RunObjects:
        """Where the run's files are in the object store."""
        return RunObjects(self.task_id, self.run_key)

    @property
    def checkpoint_sources(self) -> list[RunObjects]:
        """The runs whose checkpoint a node restores before it trains, first found first:
        this run's own (a node started again), then the run it resumes."""
        resumed = [RunObjects(self.task_id, self.resumed_run_key)] if self.resumed_run_key else []
        return [self.objects, *resumed]

    def shown(self) -> dict[str, Any]:
        """The plan as Airflow carries it between the stages (XCom, shown in Airflow's UI) and
        as the catalog keeps it: secrets masked (``secret_values`` keeps them apart)."""
        document = self.model_dump(mode="json")
        document["env"] = masked(document["env"])
        document["parameters"] = masked(document["parameters"])
        return document

    @property
    def has_secrets(self) -> bool:
        """Whether ``shown`` masks anything (then the real values are kept apart)."""
        return any(is_sensitive(name) for name in [*self.env, *self.parameters])

    def secret_values(self) -> dict[str, dict[str, Any]]:
        """The real values that ``shown`` masks; only the stages that start nodes read them."""
        return {
            "env": {name: value for name, value in self.env.items() if is_sensitive(name)},
            "parameters": {
                name: value for name, value in self.parameters.items() if is_sensitive(name)
            },
        }

    def with_secrets(self, secrets: dict[str, dict[str, Any]]) -> RunPlan:
        """The plan a node starts with: ``shown``'s masks replaced by the real values."""
        return self.model_copy(
            update={
                "env": self.env | secrets.get("env", {}),
                "parameters": self.parameters | secrets.get("parameters", {}),
            }
        )


# Where node 0 of a run listens (``MASTER_ADDR``, ``MASTER_PORT``), as a launcher decides it for
# the plan (``octotrain.launcher.Launcher.rendezvous``, which may refuse it with ``InvalidInput``).
Rendezvous = Callable[[RunPlan], tuple[str, int]]


def recorded_plan(run: Run) -> RunPlan | None:
    """The plan ``validate`` recorded for ``run`` (``Run.plan``: ``RunPlan.shown()``, its
    secrets masked), typed; None while there is none (``{}``: a queued run, or one that failed
    validation). The one way to read ``Run.plan``.

    Read as strictly as ``validate`` writes it: every plan recorded since the catalog's first
    migration (0001) is a valid ``RunPlan`` of today, since each field added to it since then
    (resources, priority, code, the time limits, hang detection, restarts, metric extraction,
    the resumed run, ``StagedInput``'s sizes and ids) came with a default, and none was renamed
    or narrowed. A row that does not validate was not written by ``validate``, and raises."""
    return RunPlan.model_validate(run.plan) if run.plan else None


def run_key(run_id: str) -> str:
    """A folder- and object-key-safe name for an Airflow run id, unique per run id."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", run_id).strip("_")[:80]
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:8]
    return f"{readable}-{digest}"


def newest_published_inputs(
    session: Session, task: TrainingTask, spec: dict[str, Any]
) -> dict[str, Any]:
    """``spec`` with each dataset input at its dataset's newest published version (the latest
    created among the published ones); caches and datasets without one stay as they are."""
    refs = spec.get("data_inputs", [])
    names = {ref["dataset"] for ref in refs if "dataset" in ref}
    if not names:
        return spec
    newest = dict(
        session.execute(
            select(Dataset.name, DatasetVersion.version)
            .join(DatasetVersion.dataset)
            .where(
                Dataset.project_id == task.project_id,
                Dataset.name.in_(names),
                DatasetVersion.status == DatasetVersionStatus.PUBLISHED,
            )
            .order_by(DatasetVersion.id)
        ).all()
    )
    inputs = [
        ref | {"version": newest[ref["dataset"]]} if ref.get("dataset") in newest else ref
        for ref in refs
    ]
    return spec | {"data_inputs": inputs}


def resolve_run(
    session: Session,
    task: TrainingTask,
    *,
    conf: Mapping[str, Any] | None = None,
    newest_data: bool = False,
) -> ResolvedTask:
    """The task as one run uses it: the saved document with the run's settings (``conf``) and,
    for runs that start by themselves (``newest_data``), the newest published data; judged by
    every rule against the catalog as it is now."""
    document = with_run_settings(task.spec, conf or {})
    if newest_data:
        document = newest_published_inputs(session, task, document)
    return check_task(session, PLANNER, document, current=task)


def _code_lineage(algorithm: Algorithm, code: StagedInput | None) -> dict[str, Any]:
    """The code version a run ran and its digest (the same files, the same digest)."""
    row = next(
        (row for row in algorithm.code_versions if code and row.id == code.code_version_id), None
    )
    if row is None:
        return {}
    return {"code_version": row.version, "code_digest": row.content_digest}


def build_run_plan(
    session: Session,
    task: TrainingTask,
    *,
    run_id: str,
    triggered_by: str,
    master_addr: str = "",
    master_port: int = 0,
    rendezvous: Rendezvous | None = None,
    conf: Mapping[str, Any] | None = None,
    trigger: str = "manual",
    newest_data: bool = False,
) -> RunPlan:
    """Check ``task`` (with the run's ``conf``) against the catalog as it is now; raise with
    every broken rule. ``trigger`` is how the run started (Airflow's run type).

    Node 0's address is ``master_addr``:``master_port`` where the caller knows it, or what
    ``rendezvous`` (the launcher's, for ``validate``) says: the launcher judges the plan itself
    (its nodes and resources against this machine, its mount volume and container user against
    the cluster) and names the address from it, so it is asked with the plan as resolved here,
    its address not yet in it, and the plan returned has the answer; its ``InvalidInput``
    refuses the run as a broken rule does, after them."""
    resolved = resolve_run(session, task, conf=conf, newest_data=newest_data)
    spec = resolved.spec
    algorithm = resolved.algorithm
    reference = (conf or {}).get(RESUME_SETTING)
    resumed = run_to_resume(session, task, reference) if reference is not None else None
    # ``run_to_resume`` takes only a run validate planned (``why_not_resumable``).
    resumed_plan = recorded_plan(resumed) if resumed else None
    plan = RunPlan(
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
        run_as_user=resolved.container_user or str(spec.run_as_uid),
        run_as_uid=spec.run_as_uid,
        container_user=resolved.container_user,
        priority=spec.priority,
        resources=NodeResources(
            spec=resolved.resource_spec.name,
            kind=str(resolved.resource_spec.kind),
            cpu=resolved.resource_spec.cpu,
            memory_mib=resolved.resource_spec.memory_mib,
            gpu_count=resolved.resource_spec.gpu_count,
            gpu_type=resolved.resource_spec.gpu_type,
            mount_volume=resolved.resource_spec.mount_volume,
        ),
        data_inputs=resolved.data_inputs,
        input_models=resolved.input_models,
        mounts=resolved.mounts,
        code=resolved.code,
        output_repository_id=resolved.repository.id,
        output_repository=resolved.repository.name,
        model_required=spec.model_required,
        max_wait_seconds=spec.max_wait_seconds,
        max_training_seconds=spec.max_training_seconds,
        hang_after_seconds=spec.hang_detection.after_seconds if spec.hang_detection else None,
        stop_when_hung=bool(spec.hang_detection and spec.hang_detection.stop_when_hung),
        max_node_restarts=spec.node_restarts,
        metric_extraction=[
            MetricDefinition.model_validate(definition).extraction(resolved.parameters)
            for definition in algorithm.metric_definitions
        ],
        resumed_from_run_id=resumed.id if resumed else 0,
        resumed_run_key=resumed_plan.run_key if resumed_plan else "",
        lineage={
            "task": {"id": task.id, "name": task.name},
            "run_id": run_id,
            "triggered_by": triggered_by,
            "trigger": trigger,
            "algorithm": {"name": algorithm.name, "image": algorithm.image}
            | _code_lineage(algorithm, resolved.code),
            "parameters": masked(resolved.parameters),
            "env": masked(resolved.env),
            "resource_spec": resolved.resource_spec.name,
            "node_count": spec.node_count,
            "data_inputs": [
                ref.model_dump(exclude_none=True) | {"dataset_version_id": item.dataset_version_id}
                for ref, item in zip(spec.data_inputs, resolved.data_inputs, strict=True)
            ],
            "mounts": [
                ref.model_dump(exclude_none=True) | {"dataset_version_id": item.dataset_version_id}
                for ref, item in zip(spec.mounts, resolved.mounts, strict=True)
            ],
            "input_models": [
                ref.model_dump() | {"model_version_id": item.model_version_id}
                for ref, item in zip(spec.input_models, resolved.input_models, strict=True)
            ],
        }
        | (
            {"resumed_from": {"run": resumed.id, "airflow_run_id": resumed.airflow_run_id}}
            if resumed
            else {}
        ),
    )
    if rendezvous is None:
        return plan
    address, port = rendezvous(plan)
    return plan.model_copy(update={"master_addr": address, "master_port": port})
