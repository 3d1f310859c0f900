"""Lineage the other way round: what used a model version as its input.

A model version's own row says what it was made from (its lineage and input edges) and which
versions were trained from it (``produced``). What it does not say is which training tasks
name it as an input model (their saved documents) and which runs were launched with it (each
run's plan records the resolved ids of its input models), whether or not those runs produced a
version; this module reads both, for the console's lineage page and the REST API.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict
from sqlalchemy import select
from sqlalchemy.orm import Session

from octotrain.catalog.models import ModelVersion, Run, TrainingTask, as_utc
from octotrain.contracts import dag_id_for
from octotrain.planning import recorded_plan
from octotrain.task_spec import saved_task_spec


class TaskUse(BaseModel):
    """A training task whose saved document names the version as an input model."""

    model_config = ConfigDict(frozen=True)

    id: int
    name: str
    dag_id: str


class RunUse(BaseModel):
    """A run launched with the version as an input model; ``model_repository`` and
    ``model_version``: the version it made, if it made one."""

    model_config = ConfigDict(frozen=True)

    id: int  # the run's catalog id: "#23" wherever a run is named
    task_id: int
    task_name: str
    dag_id: str
    airflow_run_id: str
    state: str
    started_at: datetime
    model_repository: str | None
    model_version: int | None


class ModelVersionUsers(BaseModel):
    model_config = ConfigDict(frozen=True)

    tasks: list[TaskUse]
    runs: list[RunUse]


def _use(run: Run) -> RunUse:
    return RunUse(
        id=run.id,
        task_id=run.task_id,
        task_name=run.task.name,
        dag_id=dag_id_for(run.task_id),
        airflow_run_id=run.airflow_run_id,
        state=str(run.state),
        started_at=as_utc(run.started_at),
        model_repository=run.model_version.repository.name if run.model_version else None,
        model_version=run.model_version.version if run.model_version else None,
    )


def model_version_users(session: Session, version: ModelVersion) -> ModelVersionUsers:
    """The tasks of the version's project that name it as an input model, and the runs (newest
    first) whose plan was resolved with it."""
    repository = version.repository
    tasks = session.scalars(
        select(TrainingTask)
        .where(TrainingTask.project_id == repository.project_id)
        .order_by(TrainingTask.name)
    ).all()
    naming = [
        TaskUse(id=task.id, name=task.name, dag_id=dag_id_for(task.id))
        for task in tasks
        if any(
            (ref.repository, ref.version) == (repository.name, version.version)
            for ref in saved_task_spec(task.spec).input_models
        )
    ]
    runs = session.scalars(
        select(Run)
        .join(Run.task)
        .where(TrainingTask.project_id == repository.project_id)
        .order_by(Run.started_at.desc(), Run.id.desc())
    ).all()
    launched = [
        _use(run)
        for run in runs
        if (plan := recorded_plan(run))
        and any(
            item.get("model_version_id") == version.id
            for item in plan.lineage.get("input_models", [])
        )
    ]
    return ModelVersionUsers(tasks=naming, runs=launched)
