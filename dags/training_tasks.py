"""Airflow DAG file: one DAG per Octotrain training task in the catalog (see dags/factory.py).

A catalog that cannot be read makes this file fail to import, on purpose (an import error in
the UI), rather than silently yielding no DAGs.
"""

from dags.factory import build_all_dags

globals().update(build_all_dags())
