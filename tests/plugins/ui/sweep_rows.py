"""A finished sweep as its driver would leave it, written straight into a catalog for the sweep
pages' tests: the sweep (created through ``Sweeps``, judged against ``CONTEXT``), its Optuna
study's trials (parameters, reported values, final objective; some pruned, one failed) and their
runs (ended, with node holds), the best trial's run with a model version, the sweep ended
``finished`` with the best marked, as ``hooks/sweeps/sweep_driver.py`` ends one."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from optuna.trial import TrialState, create_trial
from sqlalchemy import select
from sqlalchemy.orm import Session

from hooks.sweeps.sweep_driver import trial_run_id
from hooks.sweeps.sweep_study import distributions, open_study
from octotrain.catalog.access import Scope
from octotrain.catalog.models import (
    ModelRepository,
    ModelVersion,
    ModelVersionSource,
    ModelVersionStatus,
    NodeHold,
    Run,
    RunState,
    Sweep,
    SweepState,
)
from octotrain.sweep_rules import SweepContext
from octotrain.sweeps import Sweeps, end_sweep, sweep_spec

ALICE = Scope.administrator("alice")
# The demo's algorithm (linear-regression-numpy) as a sweep is judged against it; its runs
# write the chart ``fit`` (what the demo's training writes).
CONTEXT = SweepContext(
    algorithm="linear-regression-numpy",
    declarations=[
        {"name": "epochs", "type": "int", "default": 200, "min": 1, "max": 100000},
        {"name": "learning_rate", "type": "float", "default": 0.05, "min": 0.0, "max": 10.0},
        {"name": "batch_size", "type": "int", "default": 64, "min": 1, "max": 65536},
        {"name": "seed", "type": "int", "default": 0},
    ],
    charts={"fit": ["mse", "r2"]},
    charts_from="the test",
    concurrency_refusal=lambda runs: None,
)
DOCUMENT: dict[str, Any] = {
    "name": "lr-search",
    "parameters": {
        "learning_rate": {"type": "float", "low": 0.001, "high": 0.5, "log": True},
        "batch_size": {"type": "choice", "choices": [16, 64, 256]},
        "epochs": {"type": "fixed", "value": 300},
    },
    "objective": {"chart": "fit", "series": "mse", "direction": "minimize", "take": "final"},
    "search": {"sampler": "tpe", "seed": 7},
    "budget": {"trials": 24},
    "concurrency": 2,
    "early_stopping": {"pruner": "median", "min_steps": 10, "startup_trials": 4},
}
STEPS = 30  # each trial reports its mse every 10 epochs of its 300
START = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


class Catalog(Protocol):
    url: str

    def session(self) -> Any: ...


def _mse(learning_rate: float, batch_size: int) -> float:
    """A bowl around learning rate 0.02, a little worse for large batches."""
    return 0.05 + 0.3 * (math.log10(learning_rate) + 1.7) ** 2 + batch_size / 4000


def _trial_values(number: int) -> tuple[float, int]:
    """Trial ``number``'s parameters, spread over the ranges (reproducibly)."""
    fraction = (number * 0.6180339887) % 1.0
    learning_rate = 10 ** (-3 + fraction * math.log10(500))
    return round(learning_rate, 6), (16, 64, 256)[(number * 7) % 3]


def _model_version(session: Session) -> ModelVersion:
    repository = session.scalars(
        select(ModelRepository).where(ModelRepository.name == "house-price-model")
    ).one()
    number = 1 + max((item.version for item in repository.versions), default=0)
    version = ModelVersion(
        repository_id=repository.id,
        version=number,
        status=ModelVersionStatus.COMPLETE,
        source=ModelVersionSource.IMPORTED,
        object_prefix=f"models/sweep/{number}",
    )
    session.add(version)
    session.flush()
    return version


def finished_sweep(
    catalog: Catalog, task_id: int, *, trials: int = 24, name: str = "lr-search"
) -> int:
    """A sweep ``name`` of task ``task_id`` whose ``trials`` trials have ended: a poor one of
    every three from trial 4 on pruned at its 12th value (4 of 24), trial 5 failed, the others
    finished; its id."""
    document = DOCUMENT | {"name": name, "budget": {"trials": trials}}
    with catalog.session() as session:  # committed before Optuna writes (SQLite's one writer)
        sweeps = Sweeps(session, ALICE)
        sweep = sweeps.create(task_id, document, lambda task: CONTEXT)
        session.flush()
        sweeps.start(sweep.id, airflow_run_id=f"request__sweep-{sweep.id}")
        sweep_id = sweep.id
        spec = sweep_spec(sweep)
    with catalog.session() as session:
        study = open_study(session.get(Sweep, sweep_id), spec, catalog.url)
    space = distributions(spec)
    ended: list[tuple[int, RunState, float | None, int]] = []
    for number in range(trials):
        learning_rate, batch_size = _trial_values(number)
        final = _mse(learning_rate, batch_size)
        curve = {10 * (step + 1): final + (2.0 - final) * math.exp(-step / 5)
                 for step in range(STEPS)}  # fmt: skip
        if number >= 4 and number % 3 == 1 and final > 0.2:
            reported = dict(list(curve.items())[:12])
            state, value, run_state = TrialState.PRUNED, None, RunState.PRUNED
        elif number == 5:
            reported = dict(list(curve.items())[:3])
            state, value, run_state = TrialState.FAIL, None, RunState.FAILED
        else:
            reported, state, value, run_state = curve, TrialState.COMPLETE, final, RunState.SUCCESS
        study.add_trial(
            create_trial(
                state=state,
                value=value,
                params={"learning_rate": learning_rate, "batch_size": batch_size},
                distributions=space,
                intermediate_values=reported,
            )
        )
        ended.append((number, run_state, value, len(reported)))
    with catalog.session() as session:
        best: tuple[float, Run] | None = None
        for number, run_state, value, steps in ended:
            started = START + timedelta(minutes=3 * number)
            end = started + timedelta(seconds=40 + 4 * steps)
            message = {
                RunState.PRUNED: f"pruned by sweep {name} (trial {number}, at step 120)",
                RunState.FAILED: "node 0 exited with code 1: ValueError: loss is NaN",
            }.get(run_state, "")
            run = Run(task_id=task_id, airflow_run_id=trial_run_id(sweep_id, number),
                      state=run_state, node_count=1, sweep_id=sweep_id, trial_number=number,
                      message=message, started_at=started, ended_at=end)  # fmt: skip
            session.add(run)
            session.flush()
            held = started + timedelta(seconds=5)
            session.add(NodeHold(run_id=run.id, node_index="0", started_at=held, ended_at=end))
            if value is not None and (best is None or value < best[0]):
                best = (value, run)
        assert best is not None
        best[1].model_version_id = _model_version(session).id
        session.get(Sweep, sweep_id).best_run_id = best[1].id
        session.flush()
        end_sweep(
            session,
            sweep_id,
            SweepState.FINISHED,
            f"all {trials} trials were run; best: trial {best[1].trial_number} (mse {best[0]:.4g})",
        )
        return sweep_id
