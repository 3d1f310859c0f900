"""The DAG of a training task that was deleted while Airflow still had a run of it to start.

The DAG file builds the DAGs of the tasks in the catalog, so a task runner started for a
deleted task's run would find no DAG and Airflow would reschedule it for minutes ("Dag not
found during start up"). When Airflow's parsing context names such a DAG (only task runners
set it; the dag-processor never does, so the DAG stays retired), the file builds this stand-in
instead: every stage of the task's DAG exists and fails at once, saying why.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, BaseOperator, Context, get_parsing_context
from airflow.sdk.exceptions import AirflowFailException

from octotrain.contracts import task_id_from_dag_id

# Every task id a training task's DAG has, with either launcher (dags/factory.py).
STAGE_TASK_IDS = (
    "validate",
    "stage_data",
    "launch",
    "collect_logs",
    "archive_model",
    "delete_service",
)


class TaskDeletedOperator(BaseOperator):
    """A stage of a deleted task's run: fails at once, naming the task."""

    def __init__(self, *, training_task_id: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.training_task_id = training_task_id

    def execute(self, context: Context) -> None:
        raise AirflowFailException(
            f"training task {self.training_task_id} was deleted from the catalog; "
            "this run of its DAG cannot start"
        )


def deleted_task_dag(dag_id: str) -> DAG:
    task_id = task_id_from_dag_id(dag_id)
    with DAG(
        dag_id=dag_id,
        schedule=None,
        description=f"Octotrain training task {task_id} (deleted)",
        default_args={"retries": 0},
    ) as dag:
        for stage in STAGE_TASK_IDS:
            TaskDeletedOperator(task_id=stage, training_task_id=task_id)
    return dag


def stand_ins_for_deleted_tasks(built: dict[str, DAG]) -> dict[str, DAG]:
    """The stand-in DAG a task runner needs, if it runs a deleted task's DAG; else nothing."""
    wanted = get_parsing_context().dag_id
    if wanted is None or wanted in built:
        return {}
    try:
        return {wanted: deleted_task_dag(wanted)}
    except ValueError:  # not a training task's DAG
        return {}
