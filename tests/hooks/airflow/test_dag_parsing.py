"""Retiring a deleted task's DAG in Airflow's metadata DB (this test process's own, SQLite):
marked stale and its unfinished runs failed with the reason, so nothing is left triggerable
or waiting; never deleted, which would race the dag-processor's update of the DAG's file."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path

import pytest
from airflow.dag_processing.bundles.manager import DagBundlesManager
from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
from airflow.models.dag import DagModel
from airflow.models.dagrun import DagRun
from airflow.models.serialized_dag import SerializedDagModel
from airflow.utils.session import create_session
from airflow.utils.state import DagRunState, TaskInstanceState
from airflow.utils.types import DagRunTriggeredByType, DagRunType
from sqlalchemy import select

from hooks.airflow.dag_parsing import retire_task_dag

DAG_ID = "octotrain_task_90001"
DAG_FILE = f"""
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

with DAG(dag_id="{DAG_ID}", schedule=None):
    EmptyOperator(task_id="validate") >> EmptyOperator(task_id="stage_data")
"""


@pytest.fixture
def parsed_dag(airflow_metadata_db: None, tmp_path: Path) -> Iterator[str]:
    """The DAG as the dag-processor would have stored it, with a running and a queued run."""
    (tmp_path / "dag.py").write_text(DAG_FILE)
    DagBundlesManager().sync_bundles_to_db()
    sync_bag_to_db(DagBag(dag_folder=str(tmp_path)), "dags-folder", None)
    now = datetime.datetime.now(datetime.UTC)
    with create_session() as session:
        dag = SerializedDagModel.get_dag(DAG_ID, session=session)
        assert dag is not None
        for run_id, state in (
            ("manual__1", DagRunState.RUNNING),
            ("manual__2", DagRunState.QUEUED),
        ):
            dag.create_dagrun(run_id=run_id, run_after=now, run_type=DagRunType.MANUAL,
                              triggered_by=DagRunTriggeredByType.TEST, state=state,
                              session=session)  # fmt: skip
    yield DAG_ID
    with create_session() as session:
        for model in (DagRun, SerializedDagModel, DagModel):
            session.execute(model.__table__.delete().where(model.dag_id == DAG_ID))


def runs(session: object) -> dict[str, tuple[str, str | None]]:
    found = session.scalars(select(DagRun).where(DagRun.dag_id == DAG_ID))  # type: ignore[attr-defined]
    return {run.run_id: (str(run.state), run.note) for run in found}


def test_the_dag_is_kept_stale_and_its_unfinished_runs_failed_with_the_reason(
    parsed_dag: str,
) -> None:
    with create_session() as session:
        run = session.scalars(select(DagRun).where(DagRun.run_id == "manual__1")).one()
        run.get_task_instance("validate", session=session).state = TaskInstanceState.RUNNING
    assert retire_task_dag(parsed_dag, reason="training task 'x' was deleted by alice")
    with create_session() as session:
        dag = session.get(DagModel, parsed_dag)
        assert dag is not None and dag.is_stale
        reason = "training task 'x' was deleted by alice"
        assert runs(session) == {"manual__1": ("failed", reason), "manual__2": ("failed", reason)}
        run = session.scalars(select(DagRun).where(DagRun.run_id == "manual__1")).one()
        states = {ti.task_id: ti.state for ti in run.get_task_instances(session=session)}
        assert states == {"validate": "failed", "stage_data": "skipped"}


def test_a_parse_under_way_still_saves_the_dag_of_a_task_deleted_meanwhile(
    parsed_dag: str, tmp_path: Path
) -> None:
    """The dag-processor reads the file's DAG records, then updates them: a retirement in
    between must leave a record to update (a deleted one raised ``StaleDataError`` there and
    killed the dag-processor)."""
    from airflow import settings
    from airflow.dag_processing.collection import DagModelOperation
    from sqlalchemy.orm import Session

    bag = DagBag(dag_folder=str(tmp_path))
    operation = DagModelOperation(bundle_name="dags-folder", bundle_version=None,
                                  dags={DAG_ID: bag.dags[DAG_ID]})  # fmt: skip
    with Session(settings.engine) as parsing, parsing.begin():  # the dag-processor's own
        records = operation.find_orm_dags(session=parsing)
        assert retire_task_dag(parsed_dag, reason="deleted")
        records[DAG_ID].last_parsed_time = datetime.datetime.now(datetime.UTC)
        parsing.flush()  # what every parse saves
    with create_session() as session:
        assert session.get(DagModel, parsed_dag) is not None
