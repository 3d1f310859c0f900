"""What a training task's DAG does when Airflow ends one of its runs failed.

The stages record the catalog run's end themselves (``collect_logs`` when a node failed,
``archive_model`` when archiving failed), but a run can also end with neither having finished:
their worker killed (bench.load's fault phase), a task instance failed by Airflow's heartbeat
timeout, a run marked failed in Airflow's UI. Without this callback the catalog would show such
a run active for ever, and its task could not be deleted.
"""

from __future__ import annotations

from typing import Any

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import RunState
from octotrain.contracts import task_id_from_dag_id
from octotrain.run_lifecycle import end_run


def end_catalog_run_failed(context: Any) -> None:
    """The DAG's ``on_failure_callback``: a catalog run still active ends failed, with
    Airflow's reason; one a stage already ended (failed or stopped) keeps what it says."""
    dag_run = context["dag_run"]
    reason = context.get("reason") or "a task failed"
    with default_catalog().session() as session:
        end_run(
            session,
            task_id=task_id_from_dag_id(dag_run.dag_id),
            airflow_run_id=dag_run.run_id,
            state=RunState.FAILED,
            reason=f"Airflow ended the run failed: {reason}",
        )
