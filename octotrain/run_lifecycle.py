"""A run's life in the catalog, owned here and nowhere else.

A run is ``queued`` when it is triggered (Octotrain's API records it before Airflow starts it),
``running`` once ``validate`` has resolved its plan, and then ends once: ``success`` with its
model version, ``failed``, ``stopped`` or ``pruned`` (a sweep's trial its pruner stopped). An
ended run always has its end time, and unless it succeeded, the reason in words. The stages, the
DAG's failure callback, the API, the pages and the command line all go through these functions: none
can leave a run ended without a time or a reason, and the first end wins (a run a stage ended is not
ended again by the callback).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from octotrain.catalog.models import Run, RunState

ACTIVE_RUN_STATES = (RunState.QUEUED, RunState.RUNNING)
ENDED_RUN_STATES = (RunState.SUCCESS, RunState.FAILED, RunState.STOPPED, RunState.PRUNED)


def find_run(session: Session, task_id: int, airflow_run_id: str) -> Run | None:
    """The catalog's run of task ``task_id`` that Airflow calls ``airflow_run_id``."""
    return session.scalars(
        select(Run).where(Run.task_id == task_id, Run.airflow_run_id == airflow_run_id)
    ).one_or_none()


def record_triggered(
    session: Session,
    task_id: int,
    airflow_run_id: str,
    *,
    triggered_by: str,
    node_count: int,
    resumed_from: int | None = None,
    secrets: dict[str, Any] | None = None,
    trial: tuple[int, int] | None = None,
) -> Run:
    """The run a trigger is starting, queued until ``validate`` takes it over (the same row,
    found by its Airflow run id); a retried trigger finds the row it made, also when the retry
    races the first try (the row's unique key decides, in a savepoint). ``resumed_from``: the
    earlier run whose checkpoint it resumes; ``secrets``: the secret values given for this run,
    held apart from its conf (``octotrain.secrets.held_apart``) until ``validate`` reads them;
    ``trial``: the sweep and trial number it is a trial of."""
    found = find_run(session, task_id, airflow_run_id)
    if found is not None:
        return found
    run = Run(
        task_id=task_id,
        airflow_run_id=airflow_run_id,
        state=RunState.QUEUED,
        triggered_by=triggered_by,
        trigger="manual",
        node_count=node_count,
        resumed_from_id=resumed_from,
        secrets=secrets or {},
        sweep_id=trial[0] if trial else None,
        trial_number=trial[1] if trial else None,
    )
    try:
        with session.begin_nested():
            session.add(run)
    except IntegrityError:
        found = find_run(session, task_id, airflow_run_id)
        assert found is not None
        return found
    return run


def record_validated(
    session: Session,
    task_id: int,
    airflow_run_id: str,
    *,
    triggered_by: str,
    trigger: str,
    node_count: int,
    plan: dict[str, Any],
    refused: str | None,
    secrets: dict[str, Any] | None = None,
    resumed_from: int | None = None,
) -> Run:
    """``validate`` has judged the run: it runs with ``plan`` (its secrets masked, their real
    values in ``secrets``), resuming the run ``resumed_from`` if any, or, ``refused`` (the
    broken rules in words), it has ended failed."""
    now = datetime.now(UTC)
    run = find_run(session, task_id, airflow_run_id)
    if run is None:  # not recorded by its trigger: it starts now (never after its end)
        run = Run(task_id=task_id, airflow_run_id=airflow_run_id, triggered_by=triggered_by,
                  started_at=now)  # fmt: skip
        session.add(run)
    run.trigger = trigger
    run.node_count = node_count
    run.plan = plan
    run.secrets = secrets or {}
    if resumed_from is not None:
        run.resumed_from_id = resumed_from
    if refused is None:
        run.state, run.message, run.ended_at = RunState.RUNNING, "", None
    else:
        run.state = RunState.FAILED
        run.message = f"validation failed: {refused}"
        run.ended_at = now
    session.flush()
    return run


def end_run(
    session: Session,
    run: Run | None = None,
    *,
    run_id: int | None = None,
    task_id: int | None = None,
    airflow_run_id: str | None = None,
    state: RunState,
    reason: str = "",
    model_version_id: int | None = None,
) -> bool:
    """End a run that is still active, named by ``run``, by its catalog ``run_id``, or by
    ``task_id`` and ``airflow_run_id``; False when it had already ended (the first end stays).

    A failed or stopped run needs its ``reason``; a successful one its model version, or the
    reason it has none (its task requires no model and it wrote none).
    """
    if state not in ENDED_RUN_STATES:
        raise ValueError(f"a run ends success, failed or stopped, not {state}")
    if state != RunState.SUCCESS and not reason:
        raise ValueError(f"a run that ends {state} needs the reason")
    if state == RunState.SUCCESS and model_version_id is None and not reason:
        raise ValueError("a run that ends success names its model version or why it has none")
    if run is not None:
        condition = Run.id == run.id
    elif run_id is not None:
        condition = Run.id == run_id
    elif task_id is not None and airflow_run_id is not None:
        condition = (Run.task_id == task_id) & (Run.airflow_run_id == airflow_run_id)
    else:
        raise ValueError("name the run: itself, its run_id, or its task_id and airflow_run_id")
    ended = session.execute(
        update(Run)
        .where(condition, Run.state.in_(ACTIVE_RUN_STATES))
        .values(
            state=state,
            message=reason,
            ended_at=datetime.now(UTC),
            model_version_id=model_version_id,
        )
        .execution_options(synchronize_session="fetch")
    )
    return bool(ended.rowcount)


def note_active_run(session: Session, run_id: int, *, note: str, replacing: str = "") -> bool:
    """Show ``note`` as the message of a run still active (the run view's "Note": a node that
    looks hung, while it hangs) in place of ``replacing``: another note is left as it is, and
    so is an ended run's reason. ``note=""`` with ``replacing`` withdraws a note."""
    changed = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.state.in_(ACTIVE_RUN_STATES), Run.message == replacing)
        .values(message=note)
        .execution_options(synchronize_session="fetch")
    )
    return bool(changed.rowcount)


def held_secrets(session: Session, task_id: int, airflow_run_id: str) -> dict[str, Any]:
    """The secret values a trigger held apart for a run it queued (``record_triggered``), for
    ``validate`` to plan the run with; none once the run is planned or when nothing was held."""
    run = find_run(session, task_id, airflow_run_id)
    return dict(run.secrets) if run is not None and run.state == RunState.QUEUED else {}


def forget_trigger(session: Session, task_id: int, airflow_run_id: str) -> None:
    """Remove the queued run a trigger recorded before Airflow refused to start it: a failed
    trigger leaves no run behind (nor the secrets held for it)."""
    run = find_run(session, task_id, airflow_run_id)
    if run is not None and run.state == RunState.QUEUED:
        session.delete(run)
        session.flush()


def run_secrets(session: Session, run_id: int) -> dict[str, Any]:
    """The real values of the run's secret variables and parameters (``RunPlan.with_secrets``)."""
    run = session.get(Run, run_id)
    return dict(run.secrets) if run is not None else {}
