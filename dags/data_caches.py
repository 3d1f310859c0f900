"""Airflow DAG file: the data-cache job, which fills the data caches users ask for.

It runs every minute and does nothing when no cache waits: a new or refreshed cache is
usually ready a minute after it was asked for (sooner with ``octotrain cache fill``).
"""

from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG

from operators.fill_data_caches import FillDataCachesOperator

with DAG(
    dag_id="octotrain_data_caches",
    dag_display_name="Octotrain data caches",
    description="Copies dataset versions into the data caches users asked for",
    schedule=timedelta(minutes=1),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=False,
    tags=["octotrain"],
):
    FillDataCachesOperator(task_id="fill_data_caches", retries=0)
