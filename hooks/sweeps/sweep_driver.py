"""A sweep's driver: Optuna's ask-and-tell loop over ordinary runs of the sweep's task.

Each pass reads everything again from the catalog and the study (nothing is kept in memory that
a driver started after a crash would lack), then:

1. starts each trial the study has asked for but no run carries yet (a driver that died between
   the two), and, on its first pass, triggers again each trial still queued (the trigger's run id
   is the trial's, so Airflow starts it at most once);
2. reports each running trial's new objective points to the study and stops the trials its
   pruner gives up on: their abort flag says "pruned by sweep ...", their nodes stop within the
   launcher's grace period, and the run ends ``pruned``;
3. tells the study how each ended trial ended (its objective, pruned, or failed);
4. stops its running trials when a user stopped the sweep, its wall time is spent or too many
   trials failed in a row; asks for new trials while fewer than ``concurrency`` run and the
   budget (trials, node-hours, a grid's points) allows;
5. ends the sweep once nothing runs and nothing more may start, marking the best trial's model
   version as the sweep's result (its lineage names the sweep and the trial).

Starting a run, reading a trial's objective and stopping a run are given to it, so that the loop
is the same whichever launcher runs the trials and however they are triggered.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import optuna
from optuna.trial import FrozenTrial, TrialState
from sqlalchemy.orm import Session

from hooks.airflow.airflow_rest import REQUEST_RUN_PREFIX
from hooks.storage.catalog import CatalogHook
from hooks.sweeps.sweep_study import distributions, open_study
from octotrain.abort_flags import AbortFlag
from octotrain.catalog.models import Run, RunState, Sweep, SweepState, as_utc
from octotrain.catalog.node_holds import node_hours_of_runs
from octotrain.errors import InvalidInput
from octotrain.planning import resolve_run
from octotrain.run_lifecycle import ACTIVE_RUN_STATES, end_run, record_triggered
from octotrain.sweep_spec import Objective, SweepSpec
from octotrain.sweeps import ENDED_SWEEP_STATES, end_sweep, stopping_user, sweep_spec

log = logging.getLogger(__name__)
POLL_SECONDS = 0.5
Points = list[tuple[float, float]]


class TrialStarter(Protocol):
    def __call__(self, *, task_id: int, airflow_run_id: str, conf: dict[str, Any]) -> None:
        """Start (or find started) the run ``airflow_run_id`` of the task's DAG with ``conf``."""


# The objective's points of a run so far, ascending by x: (x, value).
ObjectiveReader = Callable[[Run, Objective], Points]
# Raise a run's abort flag (a pruning, or a stop): its nodes stop within the grace period.
RunStopper = Callable[[Run, AbortFlag], None]


def trial_run_id(sweep_id: int, number: int) -> str:
    """The Airflow run id of a sweep's trial: the trial's own, so it is triggered once."""
    return f"{REQUEST_RUN_PREFIX}sweep-{sweep_id}-trial-{number}"


def objective_value(points: Points, objective: Objective) -> float | None:
    """A finished trial's objective: its last value, or its best one."""
    values = [value for _, value in points if math.isfinite(value)]
    if not values:
        return None
    if objective.take == "final":
        return values[-1]
    return min(values) if objective.direction == "minimize" else max(values)


@dataclass
class SweepDriver:
    sweep_id: int
    catalog: CatalogHook
    start_trial: TrialStarter
    read_objective: ObjectiveReader
    stop_run: RunStopper
    poll_seconds: float = POLL_SECONDS
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        self._resumed = False  # queued trials are triggered again once, on the first pass
        self._asked_to_stop: set[int] = set()  # runs this driver raised a flag on
        self._study: optuna.Study | None = None

    def run(self) -> SweepState:
        """Drive the sweep until it has ended; its end state."""
        while (state := self.step()) not in ENDED_SWEEP_STATES:
            time.sleep(self.poll_seconds)
        return state

    def step(self) -> SweepState:
        """One pass over the sweep (module docstring); the sweep's state after it."""
        with self.catalog.session() as session:
            sweep = session.get(Sweep, self.sweep_id)
            if sweep is None:
                return SweepState.STOPPED  # deleted with its task: nothing left to drive
            if sweep.state in ENDED_SWEEP_STATES:
                return sweep.state
            spec = sweep_spec(sweep)
            study = self._open(sweep, spec)
            asked = {trial.number: trial for trial in study.get_trials(deepcopy=False)}
            runs = {run.trial_number: run for run in sweep.trials}
            for number, trial in sorted(asked.items()):
                run = runs.get(number)
                if trial.state == TrialState.RUNNING and run is None:
                    runs[number] = self._start(session, sweep, spec, trial)
                elif run is not None and trial.state == TrialState.RUNNING:
                    self._follow(session, sweep, spec, study, trial, run)
            self._resumed = True
            active = [run for run in runs.values() if run.state in ACTIVE_RUN_STATES]
            closing = self._closing(sweep, spec, study, runs)
            if closing is not None:
                state, why, flag = closing
                for run in active:
                    self._stop(run, flag)
                if not active:
                    return self._end(session, sweep, spec, study, runs, state, why)
                return sweep.state
            while len(active) < spec.concurrency and self._may_ask(session, spec, study, runs):
                trial = study.ask(distributions(spec))
                runs[trial.number] = run = self._start(session, sweep, spec, trial)
                if run.state in ACTIVE_RUN_STATES:
                    active.append(run)
            if not active and not self._may_ask(session, spec, study, runs):
                return self._end(session, sweep, spec, study, runs, None, None)
            return sweep.state

    def _open(self, sweep: Sweep, spec: SweepSpec) -> optuna.Study:
        if self._study is None:
            self._study = open_study(sweep, spec, self.catalog.url)
        return self._study

    def _start(
        self, session: Session, sweep: Sweep, spec: SweepSpec, trial: FrozenTrial | optuna.Trial
    ) -> Run:
        """Record the trial's run and trigger it; a trial whose settings the task refuses now
        (changed since the sweep was made) is recorded failed, saying why."""
        conf = spec.fixed_values() | dict(trial.params)
        run_id = trial_run_id(sweep.id, trial.number)
        try:
            resolved = resolve_run(session, sweep.task, conf=conf)
        except InvalidInput as refused:
            run = record_triggered(
                session,
                sweep.task_id,
                run_id,
                triggered_by=sweep.created_by,
                node_count=0,
                trial=(sweep.id, trial.number),
            )
            session.flush()
            end_run(
                session,
                run_id=run.id,
                state=RunState.FAILED,
                reason=f"the task refused the trial's settings: {refused}",
            )
            session.commit()
            self._open(sweep, spec).tell(trial.number, state=TrialState.FAIL)
            session.refresh(run)
            return run
        run = record_triggered(
            session,
            sweep.task_id,
            run_id,
            triggered_by=sweep.created_by,
            node_count=resolved.spec.node_count,
            trial=(sweep.id, trial.number),
        )
        session.commit()  # the trial is the sweep's before Airflow is asked: never lost
        self.start_trial(task_id=sweep.task_id, airflow_run_id=run_id, conf=conf)
        log.info("trial %d started as run %d (%s): %s", trial.number, run.id, run_id, conf)
        return run

    def _follow(
        self,
        session: Session,
        sweep: Sweep,
        spec: SweepSpec,
        study: optuna.Study,
        trial: FrozenTrial,
        run: Run,
    ) -> None:
        """Report a live trial's new points (and prune it), or tell how an ended one ended."""
        if run.state == RunState.QUEUED:
            if not self._resumed:
                conf = spec.fixed_values() | dict(trial.params)
                self.start_trial(task_id=run.task_id, airflow_run_id=run.airflow_run_id, conf=conf)
            return
        points = self.read_objective(run, spec.objective)
        if run.state == RunState.RUNNING:
            self._report(sweep, study, trial, run, points)
            return
        log.info("trial %d (run %d) ended %s", trial.number, run.id, run.state.value)
        if run.state == RunState.SUCCESS:
            value = objective_value(points, spec.objective)
            if value is not None:
                study.tell(trial.number, value)
                return
            run.message = (run.message + " " if run.message else "") + (
                f"(sweep {sweep.name}: it wrote no points of {spec.objective.chart}."
                f"{spec.objective.series}, counted as failed)"
            )
            session.commit()
        if run.state == RunState.PRUNED:
            study.tell(trial.number, state=TrialState.PRUNED)
            return
        study.tell(trial.number, state=TrialState.FAIL)

    def _report(
        self, sweep: Sweep, study: optuna.Study, trial: FrozenTrial, run: Run, points: Points
    ) -> None:
        reported = max(trial.intermediate_values, default=None)
        live = optuna.trial.Trial(study, trial._trial_id)
        added = False
        for x, value in points:
            step = int(x)
            if (reported is None or step > reported) and math.isfinite(value):
                live.report(value, step)
                reported, added = step, True
        if added and run.id not in self._asked_to_stop and live.should_prune():
            assert reported is not None
            flag = AbortFlag.pruned_by(sweep.name, trial=trial.number, step=reported)
            log.info("trial %d (run %d) pruned at step %d", trial.number, run.id, reported)
            self._stop(run, flag)

    def _stop(self, run: Run, flag: AbortFlag) -> None:
        """A run not started yet gets the flag too: its nodes read it before they start."""
        if run.id in self._asked_to_stop:
            return
        self._asked_to_stop.add(run.id)
        self.stop_run(run, flag)

    def _closing(
        self, sweep: Sweep, spec: SweepSpec, study: optuna.Study, runs: dict[int, Run]
    ) -> tuple[SweepState, str, AbortFlag] | None:
        """Why the sweep ends now whatever its budget (a user's stop, too many failures in a
        row, its wall time spent), with the flag its running trials stop with; None if not."""
        now = datetime.now(UTC)
        if sweep.state == SweepState.STOPPING:
            who = stopping_user(sweep)
            return SweepState.STOPPED, f"Stopped by {who}", AbortFlag.stopped_by(who, at=now)
        failed = _failures_in_a_row(study, runs)
        if len(failed) >= spec.max_consecutive_failures:
            numbers = ", ".join(str(run.trial_number) for run in failed)
            first = failed[0].message.splitlines()[0] if failed[0].message else "no reason given"
            why = (
                f"Stopped itself after {len(failed)} trials failed in a row (trials {numbers}; "
                f"trial {failed[0].trial_number}: {first})"
            )
            return SweepState.FAILED, why, AbortFlag.stopped_by(f"sweep {sweep.name}", at=now)
        wall = spec.budget.wall_minutes
        if wall is not None and sweep.started_at is not None:
            spent = self.clock() - as_utc(sweep.started_at).timestamp()
            if spent >= wall * 60:
                why = f"Its wall time of {wall} minutes was spent"
                flag = AbortFlag.stopped_by(f"sweep {sweep.name} (wall time spent)", at=now)
                return SweepState.FINISHED, why, flag
        return None

    def _may_ask(
        self, session: Session, spec: SweepSpec, study: optuna.Study, runs: dict[int, Run]
    ) -> bool:
        """Whether the budget allows one more trial."""
        return self._budget_left(session, spec, study, runs) is None

    def _budget_left(
        self, session: Session, spec: SweepSpec, study: optuna.Study, runs: dict[int, Run]
    ) -> str | None:
        """What of the budget is spent (None while a trial may still start)."""
        if len(runs) >= spec.budget.trials:
            return f"all {spec.budget.trials} trials were run"
        if spec.search.sampler == "grid" and len(runs) >= spec.grid_size():
            return f"every point of the grid was tried ({len(runs)} trials)"
        hours = spec.budget.node_hours
        ids = [run.id for run in runs.values()]
        if (
            hours is not None
            and sum(node_hours_of_runs(session, ids, now=self.clock()).values()) >= hours
        ):
            return f"its budget of {hours:g} node-hours was spent"
        return None

    def _end(
        self,
        session: Session,
        sweep: Sweep,
        spec: SweepSpec,
        study: optuna.Study,
        runs: dict[int, Run],
        state: SweepState | None,
        why: str | None,
    ) -> SweepState:
        best = _best_trial(study)
        best_run = runs.get(best.number) if best is not None else None
        if state is None:
            state = SweepState.FINISHED
            why = f"Finished: {self._budget_left(session, spec, study, runs)}"
        said = why or ""
        if best is not None and best_run is not None:
            value = best.value
            objective = spec.objective
            said += (
                f"; best: trial {best.number} (run {best_run.id}), {objective.chart}."
                f"{objective.series} = {value:.6g}"
            )
            sweep.best_run_id = best_run.id
            _mark_result(sweep, best_run, best.number, value, spec)
        elif state == SweepState.FINISHED:
            said += "; no trial finished with a value of its objective"
        session.flush()
        end_sweep(session, sweep.id, state, said)
        session.commit()
        return state


def _failures_in_a_row(study: optuna.Study, runs: dict[int, Run]) -> list[Run]:
    """The runs of the trials that failed last, in a row, in the order the study was told:
    a failed run, and a run that ended without a value of its objective (stopped, or
    succeeded without writing it)."""
    told = [trial for trial in study.get_trials(deepcopy=False) if trial.state.is_finished()]
    streak: list[FrozenTrial] = []
    for trial in sorted(told, key=lambda trial: (trial.datetime_complete, trial.number)):
        streak = [*streak, trial] if trial.state == TrialState.FAIL else []
    return [runs[trial.number] for trial in streak if trial.number in runs]


def _best_trial(study: optuna.Study) -> FrozenTrial | None:
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    return study.best_trial if complete else None


def _mark_result(sweep: Sweep, run: Run, number: int, value: float, spec: SweepSpec) -> None:
    """The best trial's model version is the sweep's result: its lineage says so."""
    version = run.model_version
    if version is None:
        return
    version.lineage = dict(version.lineage) | {
        "sweep": {
            "id": sweep.id,
            "name": sweep.name,
            "trial": number,
            "objective": {
                "chart": spec.objective.chart,
                "series": spec.objective.series,
                "direction": spec.objective.direction,
                "take": spec.objective.take,
                "value": value,
            },
        }
    }
