"""The sweeps' DAG's stage: a sweep that does not exist fails it (not retried for ever), one
that has ended is not driven again (a run of the sweeps' DAG triggered twice, a retry after the
end), one that failed fails it with the sweep's reason, and a running sweep has one driver (a
second run of the DAG for it fails)."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException

from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.models import SweepState
from octotrain.sweeps import end_sweep
from operators.drive_sweep import DriveSweepOperator
from tests.factories import seed
from tests.hooks.sweeps.test_sweep_driver import make_sweep


def test_a_missing_or_ended_sweep_is_not_driven(
    catalog: CatalogHook, store: LocalFolderStore, octotrain_env: Path
) -> None:
    seed(catalog, store)
    drive = DriveSweepOperator(task_id="drive_sweep")
    with pytest.raises(AirflowFailException, match="sweep 999 does not exist"):
        drive.execute({"params": {"sweep_id": 999}, "run_id": "manual__1"})  # type: ignore[arg-type]
    finished, failed = make_sweep(catalog, name="finished"), make_sweep(catalog, name="failed")
    with catalog.session() as session:
        end_sweep(session, finished, SweepState.FINISHED, "Finished: all 6 trials were run")
        end_sweep(session, failed, SweepState.FAILED, "Stopped itself after 3 trials failed")
    done = drive.execute({"params": {"sweep_id": finished}, "run_id": "manual__2"})  # type: ignore[arg-type]
    assert done == {
        "sweep": finished,
        "state": "finished",
        "message": "Finished: all 6 trials were run",
    }
    with pytest.raises(AirflowFailException, match="Stopped itself after 3 trials failed"):
        drive.execute({"params": {"sweep_id": failed}, "run_id": "manual__3"})  # type: ignore[arg-type]
    running = make_sweep(catalog, name="running")  # driven by run request__sweep-test
    with pytest.raises(AirflowFailException, match="is driven by run request__sweep-test"):
        drive.execute({"params": {"sweep_id": running}, "run_id": "manual__4"})  # type: ignore[arg-type]
