"""Airflow DAG file: one DAG per Octotrain training task in the catalog (see dags/factory.py).

A task runner sets Airflow's parsing context to the DAG it runs: then only that DAG is built
(or, for a run of a task deleted since, the stand-in DAG whose stages fail at once saying so:
dags/deleted_tasks.py). The dag-processor sets none and gets every task's DAG.

A catalog that cannot be read makes this file fail to import, on purpose (an import error in
the UI), rather than silently yielding no DAGs.
"""

from airflow.sdk import get_parsing_context

from dags.deleted_tasks import stand_ins_for_deleted_tasks
from dags.factory import build_all_dags

_built = build_all_dags(only_dag_id=get_parsing_context().dag_id)
globals().update(_built | stand_ins_for_deleted_tasks(_built))
