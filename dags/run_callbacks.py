"""What a training task's DAG does when Airflow ends one of its runs failed.

The stages record the catalog run's end themselves (``collect_logs`` when a node failed,
``archive_model`` when archiving failed), but a run can also end with neither having finished:
their worker killed (bench.load's fault phase), a task instance failed by Airflow's heartbeat
timeout, a run marked failed in Airflow's UI. Without this callback the catalog would show such
a run active for ever, and its task could not be deleted.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update

from hooks.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from octotrain.contracts import task_id_from_dag_id
from octotrain.tasks import ACTIVE_RUN_STATES


def end_catalog_run_failed(context: Any) -> None:
    """The DAG's ``on_failure_callback``: a catalog run still active ends failed, with
    Airflow's reason; one a stage already ended (failed or stopped) keeps what it says."""
    dag_run = context["dag_run"]
    reason = context.get("reason") or "a task failed"
    with default_catalog().session() as session:
        session.execute(
            update(Run)
            .where(
                Run.task_id == task_id_from_dag_id(dag_run.dag_id),
                Run.airflow_run_id == dag_run.run_id,
                Run.state.in_(ACTIVE_RUN_STATES),
            )
            .values(
                state=RunState.FAILED,
                message=f"Airflow ended the run failed: {reason}",
                ended_at=datetime.now(UTC),
            )
        )
