"""Airflow DAG file: ``octotrain_sweeps``, one DAG for every sweep; a run of it (its conf names
the sweep) drives that sweep to its end, starting its trials as runs of the task's own DAG.

One DAG, not one per task or per sweep: a sweep's trials are already runs of its task's DAG,
where its logs, charts and history are; the sweep itself is a loop over them that only needs
a sweep's id. A DAG per sweep would appear only after the dag-processor's next parse (a new
sweep could not start at once) and would leave a DAG behind per sweep ever made. Here a sweep
starts the moment it is triggered, and Airflow's grid shows every sweep as one row of runs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Param

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import SweepState
from octotrain.contracts import SWEEPS_DAG_ID
from octotrain.sweeps import end_sweep
from operators.drive_sweep import DriveSweepOperator

START = datetime(2026, 1, 1, tzinfo=UTC)
# Sweeps driven at once (each holds one worker slot while its trials run).
MAX_ACTIVE_SWEEPS = 16
# A driver whose worker died is started again this many times (it carries on where it was).
DRIVER_RETRIES = 20


def end_sweep_failed(context: Any) -> None:
    """The DAG's ``on_failure_callback``: a sweep its driver could not finish ends failed."""
    sweep_id = (context["dag_run"].conf or {}).get("sweep_id")
    if not isinstance(sweep_id, int):
        return
    reason = context.get("reason") or "its driver failed"
    with default_catalog().session() as session:
        end_sweep(
            session, sweep_id, SweepState.FAILED, f"Airflow ended the sweep's run failed: {reason}"
        )


with DAG(
    dag_id=SWEEPS_DAG_ID,
    dag_display_name="Octotrain sweeps",
    description="Drives hyper-parameter sweeps: each run starts and prunes one sweep's trials",
    schedule=None,
    start_date=START,
    catchup=False,
    max_active_runs=MAX_ACTIVE_SWEEPS,
    is_paused_upon_creation=False,
    on_failure_callback=end_sweep_failed,
    tags=["octotrain"],
    params={"sweep_id": Param(type="integer", minimum=1, description="The sweep to drive")},
    doc_md=__doc__,
):
    DriveSweepOperator(
        task_id="drive_sweep", retries=DRIVER_RETRIES, retry_delay=timedelta(seconds=5)
    )
