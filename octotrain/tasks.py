"""Saving training tasks: every rule checked, nothing written unless all of them hold."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from octotrain.catalog.models import Project, TrainingTask
from octotrain.errors import FieldProblem, TaskDefinitionError
from octotrain.planning import resolve_task_spec
from octotrain.task_spec import parse_task_spec


def create_training_task(session: Session, document: object) -> TrainingTask:
    """Validate ``document`` (rules and references) and add it as a new training task."""
    spec = parse_task_spec(document)
    problems: list[FieldProblem] = []
    taken = session.scalar(
        select(TrainingTask.id)
        .join(Project)
        .where(Project.name == spec.project, TrainingTask.name == spec.name)
    )
    if taken is not None:
        problems.append(
            FieldProblem("name", f"a task named '{spec.name}' already exists in the project")
        )
    try:
        resolved = resolve_task_spec(session, spec)
    except TaskDefinitionError as error:
        problems.extend(error.problems)
        resolved = None
    if problems:
        raise TaskDefinitionError(problems)
    assert resolved is not None
    task = TrainingTask(
        project_id=resolved.project.id,
        name=spec.name,
        description=spec.description,
        spec=spec.model_dump(mode="json"),
    )
    session.add(task)
    session.flush()
    return task
