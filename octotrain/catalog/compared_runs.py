"""Which runs a comparison may put side by side: runs the user can see, all of one project (a
project is the unit of access; tasks of one project share its data and models, so their runs are
comparable), and a task's retraining runs for its trend.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from octotrain.catalog.access import Scope
from octotrain.catalog.models import Run, TrainingTask
from octotrain.errors import InvalidQuery, NotFound
from octotrain.run_comparison import RUNS_FIELD
from octotrain.tasks import Tasks

# How Airflow started the runs of a retraining: the task's cron, or a new version of a dataset
# it retrains on (Run.trigger).
RETRAINING_TRIGGERS = ("scheduled", "asset_triggered")
# The runs offered to add to a comparison: the project's latest, at most this many of a task.
ADDABLE_RUNS = 200
ADDABLE_RUNS_PER_TASK = 10


@dataclass(frozen=True)
class ComparedRun:
    """A run with what a comparison shows of it: its task and a label for legends (the task's
    name too when the runs are of several tasks)."""

    run: Run
    task: TrainingTask
    label: str


def compared_runs(session: Session, scope: Scope, ids: list[int]) -> list[ComparedRun]:
    """The runs ``ids`` in that order; refused naming ``runs`` when one is not a run of the
    user's projects (another project's run is not disclosed) or they span several projects."""
    tasks = Tasks(session, scope)
    found: list[tuple[Run, TrainingTask]] = []
    unknown = []
    for run_id in ids:
        run = session.get(Run, run_id)
        task = _visible_task(tasks, run)
        if run is None or task is None:
            unknown.append(str(run_id))
        else:
            found.append((run, task))
    if unknown:
        raise InvalidQuery.one(
            RUNS_FIELD, f"no run {', '.join(unknown)} in the projects you are a member of"
        )
    projects = {task.project.name for _, task in found}
    if len(projects) > 1:
        raise InvalidQuery.one(
            RUNS_FIELD,
            "the runs must be of one project; these are of "
            + ", ".join(f"'{name}'" for name in sorted(projects)),
        )
    several_tasks = len({task.id for _, task in found}) > 1
    return [
        ComparedRun(run=run, task=task, label=_label(run, task, with_task=several_tasks))
        for run, task in found
    ]


def runs_to_add(
    session: Session, scope: Scope, project: str, chosen: Collection[int]
) -> list[tuple[TrainingTask, list[Run]]]:
    """What a comparison of ``project``'s runs may add: the project's ``ADDABLE_RUNS`` latest
    runs not chosen yet, at most ``ADDABLE_RUNS_PER_TASK`` of a task, by task name (runs of
    several tasks of one project compare: they share its data and models)."""
    tasks = {task.id: task for task in Tasks(session, scope).list(project)}
    latest = session.scalars(
        select(Run)
        .where(Run.task_id.in_(tasks), Run.id.not_in(chosen))
        .order_by(Run.started_at.desc(), Run.id.desc())
        .limit(ADDABLE_RUNS)
    )
    by_task: dict[int, list[Run]] = {}
    for run in latest:
        runs = by_task.setdefault(run.task_id, [])
        if len(runs) < ADDABLE_RUNS_PER_TASK:
            runs.append(run)
    return sorted(
        ((tasks[task_id], runs) for task_id, runs in by_task.items()),
        key=lambda item: (item[0].name, item[0].id),
    )


def retraining_runs(session: Session, scope: Scope, task_id: int, limit: int) -> list[Run]:
    """The task's latest ``limit`` runs started by its schedule or a new dataset version,
    oldest first."""
    task = Tasks(session, scope).get(task_id)
    latest = session.scalars(
        select(Run)
        .where(Run.task_id == task.id, Run.trigger.in_(RETRAINING_TRIGGERS))
        .order_by(Run.started_at.desc(), Run.id.desc())
        .limit(limit)
    )
    return list(reversed(list(latest)))


def _visible_task(tasks: Tasks, run: Run | None) -> TrainingTask | None:
    if run is None:
        return None
    try:
        return tasks.get(run.task_id)
    except NotFound:
        return None


def _label(run: Run, task: TrainingTask, *, with_task: bool) -> str:
    return f"{task.name} · #{run.id}" if with_task else f"#{run.id}"
