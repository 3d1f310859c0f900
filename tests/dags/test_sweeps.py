"""The sweeps' DAG: one for every sweep, a run's conf naming it; a sweep whose driver Airflow
ends failed (its retries spent) ends failed with Airflow's reason, and one that had ended keeps
its end."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.models import Sweep, SweepState
from octotrain.sweeps import end_sweep
from tests.factories import seed
from tests.hooks.sweeps.test_sweep_driver import make_sweep


def test_a_sweep_its_driver_could_not_finish_ends_failed_saying_why(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    from dags.sweeps import end_sweep_failed

    seed(catalog, store)
    running, ended = make_sweep(catalog), make_sweep(catalog, name="ended")
    with catalog.session() as session:
        end_sweep(session, ended, SweepState.FINISHED, "Finished: all 6 trials were run")
    for sweep_id in (running, ended):
        dag_run = SimpleNamespace(conf={"sweep_id": sweep_id})
        end_sweep_failed({"dag_run": dag_run, "reason": "task_failure"})
    with catalog.session() as session:
        failed, kept = session.get(Sweep, running), session.get(Sweep, ended)
        assert (failed.state, failed.message) == (
            SweepState.FAILED,
            "Airflow ended the sweep's run failed: task_failure",
        )
        assert (kept.state, kept.message) == (
            SweepState.FINISHED,
            "Finished: all 6 trials were run",
        )
