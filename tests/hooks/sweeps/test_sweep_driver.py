"""The sweep driver's loop against a catalog and a study, with runs played by the test: trials
started once, reported and pruned, failures counted, a driver started again carrying on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import select

from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from hooks.sweeps.sweep_driver import SweepDriver, trial_run_id
from hooks.sweeps.sweep_study import open_study
from octotrain.abort_flags import AbortFlag
from octotrain.catalog.access import Scope
from octotrain.catalog.models import Run, RunState, Sweep, SweepState
from octotrain.run_lifecycle import end_run
from octotrain.sweep_rules import SweepContext
from octotrain.sweep_spec import Objective
from octotrain.sweeps import Sweeps, sweep_spec
from tests.factories import add_task, seed

USER = Scope.administrator("alice")
CONTEXT = SweepContext(
    algorithm="linear-regression-numpy",
    declarations=[
        {"name": "learning_rate", "type": "float", "min": 0.0, "max": 10.0},
        {"name": "epochs", "type": "int", "min": 1, "max": 100000},
    ],
    charts={"fit": ["mse", "r2"]},
    charts_from="test",
    concurrency_refusal=lambda runs: None,
)


@dataclass
class PlayedRuns:
    """The trials' runs as the test plays them: what was started, each run's points, the
    flags the driver raised."""

    catalog: CatalogHook
    started: list[str] = field(default_factory=list)
    points: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    flags: dict[str, AbortFlag] = field(default_factory=dict)

    def start(self, *, task_id: int, airflow_run_id: str, conf: dict[str, Any]) -> None:
        self.started.append(airflow_run_id)

    def read(self, run: Run, objective: Objective) -> list[tuple[float, float]]:
        return self.points.get(run.airflow_run_id, [])

    def stop(self, run: Run, flag: AbortFlag) -> None:
        self.flags[run.airflow_run_id] = flag

    def runs(self, sweep_id: int) -> list[Run]:
        with self.catalog.session() as session:
            query = select(Run).where(Run.sweep_id == sweep_id).order_by(Run.trial_number)
            return list(session.scalars(query))

    def set(self, run: Run, state: RunState, points: list[float] | None = None) -> None:
        if points is not None:
            self.points[run.airflow_run_id] = [(i + 1.0, v) for i, v in enumerate(points)]
        with self.catalog.session() as session:
            if state == RunState.RUNNING:
                session.get(Run, run.id).state = RunState.RUNNING
            else:
                end_run(session, run_id=run.id, state=state, reason=f"{state.value} in the test")


def make_sweep(catalog: CatalogHook, **changes: Any) -> int:
    """A running sweep (its DAG run not started: the test drives it) of a new task."""
    task_id = add_task(catalog, name=f"swept-{changes.get('name', 'lr-search')}")
    document = {
        "name": "lr-search",
        "parameters": {
            "learning_rate": {"type": "float", "low": 0.001, "high": 1.0, "log": True},
            "epochs": {"type": "fixed", "value": 10},
        },
        "objective": {"chart": "fit", "series": "mse", "direction": "minimize"},
        "search": {"sampler": "random", "seed": 1},
        "budget": {"trials": 6},
        "concurrency": 2,
        "early_stopping": {"pruner": "median", "min_steps": 2, "startup_trials": 2},
    } | changes
    with catalog.session() as session:
        sweeps = Sweeps(session, USER)
        sweep = sweeps.create(task_id, document, lambda task: CONTEXT)
        sweeps.start(sweep.id, airflow_run_id="request__sweep-test")
        return sweep.id


@pytest.fixture
def played(catalog: CatalogHook, store: LocalFolderStore) -> PlayedRuns:
    seed(catalog, store)
    return PlayedRuns(catalog)


def driver_of(played: PlayedRuns, sweep_id: int) -> SweepDriver:
    return SweepDriver(
        sweep_id,
        catalog=played.catalog,
        start_trial=played.start,
        read_objective=played.read,
        stop_run=played.stop,
        poll_seconds=0,
    )


def test_trials_start_as_runs_of_the_task_a_hopeless_one_is_pruned_and_the_best_is_found(
    played: PlayedRuns,
) -> None:
    sweep_id = make_sweep(played.catalog)
    driver = driver_of(played, sweep_id)
    assert driver.step() == SweepState.RUNNING
    first = played.runs(sweep_id)
    assert [run.trial_number for run in first] == [0, 1]
    assert played.started == [trial_run_id(sweep_id, 0), trial_run_id(sweep_id, 1)]
    for run, curve in zip(first, ([4, 2, 1, 0.5], [4, 3, 2, 1.5]), strict=True):
        played.set(run, RunState.RUNNING, curve)
    driver.step()
    for run in first:
        played.set(run, RunState.SUCCESS)
    driver.step()  # told; two more started
    second = played.runs(sweep_id)[2:]
    assert [run.trial_number for run in second] == [2, 3]
    played.set(second[0], RunState.RUNNING, [9, 9, 9])  # hopeless: above the median at step 3
    played.set(second[1], RunState.RUNNING, [3, 1.5])
    driver.step()
    flag = played.flags[second[0].airflow_run_id]
    assert flag.pruned and flag.stopped
    assert flag.reason == "pruned by sweep lr-search (trial 2, at step 3)"
    assert second[1].airflow_run_id not in played.flags
    played.set(second[0], RunState.PRUNED)
    played.set(second[1], RunState.SUCCESS, [3, 1.5, 0.25])
    while (state := driver.step()) == SweepState.RUNNING:
        for run in played.runs(sweep_id):
            if run.state == RunState.QUEUED:
                played.set(run, RunState.RUNNING, [5, 4, 3])
            elif run.state == RunState.RUNNING:
                played.set(run, RunState.SUCCESS)
    assert state == SweepState.FINISHED
    with played.catalog.session() as session:
        sweep = session.get(Sweep, sweep_id)
        best = session.get(Run, sweep.best_run_id)
        assert best.trial_number == 3
        assert "all 6 trials were run; best: trial 3" in sweep.message
        trials = open_study(sweep, sweep_spec(sweep), played.catalog.url).get_trials()
    assert [t.state.name for t in trials].count("PRUNED") == 1
    assert len(played.runs(sweep_id)) == 6


def test_a_sweep_stops_itself_after_failures_in_a_row_saying_why(played: PlayedRuns) -> None:
    sweep_id = make_sweep(played.catalog, max_consecutive_failures=2)
    driver = driver_of(played, sweep_id)
    driver.step()
    failed, no_objective = played.runs(sweep_id)
    played.set(failed, RunState.FAILED)
    played.set(no_objective, RunState.SUCCESS)  # but it never wrote its objective's chart
    assert driver.step() == SweepState.FAILED
    with played.catalog.session() as session:
        message = session.get(Sweep, sweep_id).message
        told = session.get(Run, no_objective.id).message
    assert message.startswith("Stopped itself after 2 trials failed in a row (trials 0, 1;")
    assert "trial 0: failed in the test" in message
    assert told.endswith("(sweep lr-search: it wrote no points of fit.mse, counted as failed)")


def test_a_driver_started_again_starts_no_trial_twice_and_loses_none(
    played: PlayedRuns,
) -> None:
    sweep_id = make_sweep(played.catalog)
    driver_of(played, sweep_id).step()
    # The first driver dies after asking the study for a trial, before recording its run.
    with played.catalog.session() as session:
        sweep = session.get(Sweep, sweep_id)
        open_study(sweep, sweep_spec(sweep), played.catalog.url).ask()
    played.started.clear()
    again = driver_of(played, sweep_id)
    again.step()
    runs = played.runs(sweep_id)
    assert [run.trial_number for run in runs] == [0, 1, 2]
    with played.catalog.session() as session:
        sweep = session.get(Sweep, sweep_id)
        tried = [t.params for t in open_study(sweep, sweep_spec(sweep), played.catalog.url).trials]
    assert tried[2] not in tried[:2]  # the seeded sampler made again drew no value again
    # the asked trial got its run; the queued ones were triggered again under their own ids
    assert sorted(played.started) == sorted(run.airflow_run_id for run in runs)
    played.started.clear()
    again.step()
    assert played.started == []


def test_a_user_s_stop_stops_the_running_trials_then_the_sweep(played: PlayedRuns) -> None:
    sweep_id = make_sweep(played.catalog)
    driver = driver_of(played, sweep_id)
    driver.step()
    with played.catalog.session() as session:
        assert Sweeps(session, Scope.administrator("bob")).request_stop(sweep_id).state == (
            SweepState.STOPPING
        )
    assert driver.step() == SweepState.STOPPING
    assert {flag.reason for flag in played.flags.values()} == {"stopped by bob"}
    for run in played.runs(sweep_id):
        played.set(run, RunState.STOPPED)
    assert driver.step() == SweepState.STOPPED


def test_a_grid_ends_once_every_point_was_tried(played: PlayedRuns) -> None:
    """Optuna's grid sampler stops its study when told its last point, which only works inside
    ``study.optimize``: the driver's loop must not fail there."""
    grid = {
        "search": {"sampler": "grid", "seed": 3},
        "concurrency": 1,
        "parameters": {"learning_rate": {"type": "choice", "choices": [0.1, 0.2, 0.3]}},
    }
    sweep_id = make_sweep(played.catalog, **grid)
    driver = driver_of(played, sweep_id)
    while (state := driver.step()) == SweepState.RUNNING:
        for run in played.runs(sweep_id):
            if run.state == RunState.QUEUED:
                played.set(
                    run, RunState.SUCCESS, [1.0 / run.trial_number if run.trial_number else 2]
                )
    assert state == SweepState.FINISHED
    runs = played.runs(sweep_id)
    with played.catalog.session() as session:
        message = session.get(Sweep, sweep_id).message
    assert message.startswith("Finished: every point of the grid was tried (3 trials)"), message
    assert len(runs) == 3
