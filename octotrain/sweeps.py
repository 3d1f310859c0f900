"""Sweeps of training tasks: create, list, show, start and stop, scoped to the user's projects,
and a sweep's life (``created`` -> ``running`` -> ``stopping`` -> ended once), owned here.

A sweep is judged whole before it is written (``octotrain.sweep_rules``); its trials are runs of
its task that its driver starts (``hooks/sweeps/sweep_driver.py``), which ends it through
``end_sweep`` like everything else that ends one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from octotrain.catalog.access import Scope
from octotrain.catalog.models import Project, Run, Sweep, SweepState, TrainingTask
from octotrain.errors import Conflict, NotFound
from octotrain.sweep_rules import SweepContext, judge_sweep
from octotrain.sweep_spec import SweepSpec
from octotrain.tasks import Tasks

ENDED_SWEEP_STATES = (SweepState.FINISHED, SweepState.STOPPED, SweepState.FAILED)
# A stopping sweep's message names who asked (its driver stops the trials as that user).
STOPPING_PREFIX = "Stopping: asked by "


class Sweeps:
    def __init__(self, session: Session, scope: Scope) -> None:
        self.session = session
        self.scope = scope

    def create(
        self,
        task_id: int,
        document: object,
        context_of: Callable[[TrainingTask], SweepContext],
    ) -> Sweep:
        """A new sweep of task ``task_id``, judged against its task (``context_of``); its name
        is unique among the task's sweeps."""
        task = Tasks(self.session, self.scope).get(task_id)
        spec = judge_sweep(document, context_of(task))
        sweep = Sweep(
            task_id=task.id,
            name=spec.name,
            spec=spec.model_dump(mode="json"),
            state=SweepState.CREATED,
            created_by=self.scope.username,
        )
        try:
            with self.session.begin_nested():
                self.session.add(sweep)
        except IntegrityError:
            raise Conflict(f"task {task.name} already has a sweep named '{spec.name}'") from None
        return sweep

    def list(self, task_id: int) -> list[Sweep]:
        """The task's sweeps, newest first."""
        Tasks(self.session, self.scope).get(task_id)
        query = select(Sweep).where(Sweep.task_id == task_id).order_by(Sweep.id.desc())
        return list(self.session.scalars(query))

    def get(self, sweep_id: int) -> Sweep:
        sweep = self.session.scalars(
            select(Sweep)
            .join(TrainingTask, Sweep.task_id == TrainingTask.id)
            .join(Project, TrainingTask.project_id == Project.id)
            .where(Sweep.id == sweep_id, self.scope.visible_projects())
        ).one_or_none()
        if sweep is None:
            raise NotFound(f"sweep {sweep_id} does not exist")
        return sweep

    def trial(self, sweep_id: int, number: int) -> Run:
        sweep = self.get(sweep_id)
        found = next((run for run in sweep.trials if run.trial_number == number), None)
        if found is None:
            raise NotFound(f"sweep {sweep.name} has no trial {number}")
        return found

    def start(self, sweep_id: int, *, airflow_run_id: str) -> Sweep:
        """Mark the sweep running under the sweeps' DAG run ``airflow_run_id`` (a sweep starts
        once; starting a running one again is a no-op for the same DAG run)."""
        sweep = self.get(sweep_id)
        if sweep.state == SweepState.RUNNING and sweep.airflow_run_id == airflow_run_id:
            return sweep
        if sweep.state != SweepState.CREATED:
            raise Conflict(f"sweep {sweep.name} is {sweep.state.value}: a sweep starts once")
        sweep.state = SweepState.RUNNING
        sweep.airflow_run_id = airflow_run_id
        sweep.started_at = datetime.now(UTC)
        self.session.flush()
        return sweep

    def forget_start(self, sweep_id: int) -> None:
        """Airflow refused the sweep's DAG run: it was never started."""
        self.session.execute(
            update(Sweep)
            .where(Sweep.id == sweep_id, Sweep.state == SweepState.RUNNING)
            .values(state=SweepState.CREATED, airflow_run_id="", started_at=None)
        )

    def delete_unstarted(self, sweep_id: int) -> None:
        """Remove a sweep that never started (its request's start failed): it has no trials and
        no study."""
        sweep = self.get(sweep_id)
        if sweep.state != SweepState.CREATED:
            raise Conflict(f"sweep {sweep.name} has started: it is kept with its trials")
        self.session.delete(sweep)
        self.session.flush()

    def request_stop(self, sweep_id: int) -> Sweep:
        """Stop the sweep: one never started ends ``stopped`` at once; a running one is
        ``stopping`` until its driver has stopped its running trials."""
        sweep = self.get(sweep_id)
        if sweep.state in ENDED_SWEEP_STATES:
            raise Conflict(f"sweep {sweep.name} has already ended ({sweep.state.value})")
        if sweep.state == SweepState.CREATED:
            end_sweep(
                self.session,
                sweep.id,
                SweepState.STOPPED,
                f"Stopped by {self.scope.username} before it started",
            )
        elif sweep.state == SweepState.RUNNING:
            sweep.state = SweepState.STOPPING
            sweep.message = STOPPING_PREFIX + self.scope.username
        self.session.flush()
        self.session.refresh(sweep)
        return sweep


def sweep_spec(sweep: Sweep) -> SweepSpec:
    """A saved sweep's document, typed (judged when it was saved)."""
    return SweepSpec.model_validate(sweep.spec)


def stopping_user(sweep: Sweep) -> str:
    """Who asked a ``stopping`` sweep to stop."""
    return sweep.message.removeprefix(STOPPING_PREFIX) or sweep.created_by


def end_sweep(session: Session, sweep_id: int, state: SweepState, message: str) -> bool:
    """End the sweep once (the first end wins); False when it had ended already."""
    assert state in ENDED_SWEEP_STATES
    ended = session.execute(
        update(Sweep)
        .where(Sweep.id == sweep_id, Sweep.state.not_in(ENDED_SWEEP_STATES))
        .values(state=state, message=message, ended_at=datetime.now(UTC))
    )
    return bool(ended.rowcount)
