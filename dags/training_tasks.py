"""Airflow DAG file: one DAG per Octotrain training task in the catalog (see dags/factory.py),
and, in a task runner started for a run of a task deleted since, the stand-in DAG whose stages
fail at once saying so (dags/deleted_tasks.py).

A catalog that cannot be read makes this file fail to import, on purpose (an import error in
the UI), rather than silently yielding no DAGs.
"""

from dags.deleted_tasks import stand_ins_for_deleted_tasks
from dags.factory import build_all_dags

_built = build_all_dags()
globals().update(_built | stand_ins_for_deleted_tasks(_built))
