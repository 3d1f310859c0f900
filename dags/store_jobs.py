"""Airflow DAG file: the object-store jobs.

- ``octotrain_data_caches`` fills the data caches users ask for. It runs every minute and does
  nothing when no cache waits: a new or refreshed cache is usually ready a minute after it was
  asked for (sooner with ``octotrain cache fill``).
- ``octotrain_orphan_objects`` removes, daily, objects that no catalog row points to and that
  are older than a day (left by writes that died before their rows were committed).
"""

from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG

from operators.store_jobs import FillDataCachesOperator, SweepOrphanObjectsOperator

START = datetime(2026, 1, 1, tzinfo=UTC)

with DAG(
    dag_id="octotrain_data_caches",
    dag_display_name="Octotrain data caches",
    description="Copies dataset versions into the data caches users asked for",
    schedule=timedelta(minutes=1),
    start_date=START,
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=False,
    tags=["octotrain"],
):
    FillDataCachesOperator(task_id="fill_data_caches", retries=0)

with DAG(
    dag_id="octotrain_orphan_objects",
    dag_display_name="Octotrain orphan objects",
    description="Removes objects of failed writes that no catalog row points to",
    schedule="@daily",
    start_date=START,
    catchup=False,
    max_active_runs=1,
    is_paused_upon_creation=False,
    tags=["octotrain"],
):
    SweepOrphanObjectsOperator(task_id="sweep_orphan_objects", grace=timedelta(days=1))
