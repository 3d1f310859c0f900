"""A sweep and its trials as one view (``octotrain.sweep_views``): the catalog's rows (the sweep,
its trials' runs, their node holds) joined with its study's trials (their parameters, objective
and reported values), each read in one query, so a sweep of hundreds of trials reads at once."""

from __future__ import annotations

import math
import time
from collections import defaultdict

from optuna.trial import FrozenTrial, TrialState
from sqlalchemy.orm import Session

from hooks.sweeps.sweep_study import study_trials
from octotrain.catalog.models import Run, Sweep, as_utc
from octotrain.catalog.node_holds import node_hours_of_runs
from octotrain.sweep_views import (
    SweepCurves,
    SweepResult,
    SweepSummary,
    SweepView,
    TrialCurve,
    TrialView,
)
from octotrain.sweeps import sweep_spec


def sweep_view(session: Session, sweep: Sweep, catalog_url: str) -> SweepView:
    trials = trial_views(session, sweep, catalog_url)
    return SweepView(**_summary(session, sweep, trials).model_dump(), trials=trials)


def sweep_summary(session: Session, sweep: Sweep, catalog_url: str) -> SweepSummary:
    return _summary(session, sweep, trial_views(session, sweep, catalog_url))


def trial_views(session: Session, sweep: Sweep, catalog_url: str) -> list[TrialView]:
    asked = {trial.number: trial for trial in study_trials(sweep, catalog_url)}
    fixed = sweep_spec(sweep).fixed_values()
    runs = {run.trial_number: run for run in sweep.trials}
    hours = node_hours_of_runs(session, [run.id for run in runs.values()], now=time.time())
    views = []
    for number in sorted(set(asked) | {n for n in runs if n is not None}):
        trial, run = asked.get(number), runs.get(number)
        hours_of = hours.get(run.id, 0.0) if run else 0.0
        views.append(_trial_view(number, trial, run, hours_of, fixed))
    return views


def sweep_curves(sweep: Sweep, catalog_url: str) -> SweepCurves:
    curves = []
    for trial in study_trials(sweep, catalog_url):
        steps = sorted(trial.intermediate_values)
        values = [trial.intermediate_values[step] for step in steps]
        kept = [(s, v) for s, v in zip(steps, values, strict=True) if math.isfinite(v)]
        curves.append(
            TrialCurve(
                number=trial.number,
                state=_state(trial, None),
                steps=[s for s, _ in kept],
                values=[v for _, v in kept],
            )
        )
    return SweepCurves(direction=sweep_spec(sweep).objective.direction, trials=curves)


def _trial_view(
    number: int,
    trial: FrozenTrial | None,
    run: Run | None,
    hours: float,
    fixed: dict[str, bool | int | float | str],
) -> TrialView:
    """``parameters``: what the trial ran with, its fixed values included (what re-running it
    needs)."""
    started = as_utc(run.started_at) if run else None
    ended = as_utc(run.ended_at) if run and run.ended_at else None
    duration = (
        (ended.timestamp() if ended else time.time()) - started.timestamp() if started else None
    )
    reported = trial.intermediate_values if trial else {}
    complete = trial is not None and trial.state == TrialState.COMPLETE
    objective = trial.value if complete and trial else _last(reported)
    return TrialView(
        number=number,
        run_id=run.id if run else None,
        airflow_run_id=run.airflow_run_id if run else "",
        state=_state(trial, run),
        parameters=fixed | dict(trial.params) if trial else {},
        objective=objective,
        complete=complete,
        steps_reported=len(reported),
        message=run.message if run else "",
        started_at=started,
        ended_at=ended,
        duration_seconds=duration,
        node_hours=hours,
    )


def _state(trial: FrozenTrial | None, run: Run | None) -> str:
    """The run's state where there is a run; the study's word for it otherwise."""
    if run is not None:
        return run.state.value
    if trial is None:
        return "queued"
    words = {TrialState.PRUNED: "pruned", TrialState.FAIL: "failed", TrialState.COMPLETE: "success"}
    return words.get(trial.state, "queued" if trial.state == TrialState.WAITING else "running")


def _last(reported: dict[int, float]) -> float | None:
    if not reported:
        return None
    value = reported[max(reported)]
    return value if math.isfinite(value) else None


def _summary(session: Session, sweep: Sweep, trials: list[TrialView]) -> SweepSummary:
    counts: dict[str, int] = defaultdict(int)
    for trial in trials:
        counts[trial.state] += 1
    return SweepSummary(
        id=sweep.id,
        task_id=sweep.task_id,
        task_name=sweep.task.name,
        name=sweep.name,
        description=str(sweep.spec.get("description", "")),
        state=sweep.state.value,
        message=sweep.message,
        created_by=sweep.created_by,
        created_at=as_utc(sweep.created_at),
        started_at=as_utc(sweep.started_at) if sweep.started_at else None,
        ended_at=as_utc(sweep.ended_at) if sweep.ended_at else None,
        airflow_run_id=sweep.airflow_run_id,
        spec=dict(sweep.spec),
        counts=dict(counts),
        node_hours=sum(trial.node_hours for trial in trials),
        best=_best(session, sweep, trials),
    )


def _best(session: Session, sweep: Sweep, trials: list[TrialView]) -> SweepResult | None:
    """The sweep's result once it ended (its marked trial); the best finished so far before."""
    spec = sweep_spec(sweep)
    finished = [t for t in trials if t.complete and t.objective is not None and t.run_id]
    if sweep.best_run_id is not None:
        finished = [t for t in finished if t.run_id == sweep.best_run_id] or finished
    if not finished:
        return None
    pick = min if spec.objective.direction == "minimize" else max
    best = pick(finished, key=lambda t: t.objective or 0.0)
    run = session.get(Run, best.run_id)
    version = run.model_version if run else None
    return SweepResult(
        trial=best.number,
        run_id=best.run_id or 0,
        objective=best.objective or 0.0,
        parameters=best.parameters,
        model_repository=version.repository.name if version else None,
        model_version=version.version if version else None,
    )
