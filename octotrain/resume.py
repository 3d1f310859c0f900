"""Resuming a run: a new run of the same task whose nodes start from the checkpoint an earlier
run left (``CHECKPOINT``, octotrain/checkpoints.py), recorded as resuming it.

A run is resumed by triggering its task with ``resume_from`` (the earlier run's catalog id) in
the conf, beside any other setting the run may change (docs/how-to/start-a-run.md): Octotrain's
API and command line do it for you. ``validate`` judges it here: the earlier run must be one of
the same task that failed or was stopped (a successful run has its model; an active one still
writes its checkpoint).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from octotrain.catalog.models import Run, RunState, TrainingTask
from octotrain.errors import InvalidTrigger
from octotrain.run_settings import RESUME_SETTING

RESUMABLE_STATES = (RunState.FAILED, RunState.STOPPED)


def why_not_resumable(run: Run) -> str | None:
    """Why ``run`` cannot be resumed, in words; None when it can."""
    if run.state not in RESUMABLE_STATES:
        return f"run {run.id} is {run.state}: only a failed or stopped run can be resumed"
    # Validate records a whole plan or none (read typed with ``planning.recorded_plan``, which
    # imports this module: asked here only whether there is one).
    if not run.plan:
        return f"run {run.id} never started (it failed validation), so it has no checkpoint"
    return None


def run_to_resume(session: Session, task: TrainingTask, reference: object) -> Run:
    """The run of ``task`` that a conf's ``resume_from`` names; ``InvalidTrigger`` (naming
    ``conf.resume_from`` and the rule) when it names none that can be resumed."""
    field = f"conf.{RESUME_SETTING}"
    if isinstance(reference, bool) or not isinstance(reference, int):
        raise InvalidTrigger.one(field, f"must be a run's catalog id, got {reference!r}")
    run = session.get(Run, reference)
    if run is None or run.task_id != task.id:
        raise InvalidTrigger.one(field, f"training task {task.id} has no run {reference}")
    why_not = why_not_resumable(run)
    if why_not is not None:
        raise InvalidTrigger.one(field, why_not)
    return run
