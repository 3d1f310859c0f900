"""Airflow's side of a task's DAG, from the plugin (in the api-server, beside Airflow's metadata
DB): asking the dag-processor to parse the training tasks' DAG file now, after a task was
created, changed or deleted, so that its DAG (and a new schedule or trigger form) shows up
within seconds rather than at the next periodic parse (what Airflow's
``PUT /api/v2/parseDagFile/{file_token}`` does: a priority parsing request in the metadata DB);
and retiring a deleted task's DAG at once.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import PurePosixPath

from airflow.api.common.delete_dag import delete_dag
from airflow.api.common.mark_tasks import set_dag_run_state_to_failed
from airflow.exceptions import AirflowException
from airflow.models.dag import DagModel
from airflow.models.dagbag import DagPriorityParsingRequest
from airflow.models.dagrun import DagRun
from airflow.models.serialized_dag import SerializedDagModel
from airflow.utils.session import create_session
from airflow.utils.state import DagRunState
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from octotrain.contracts import DAG_ID_PREFIX

log = logging.getLogger(__name__)
TASKS_DAG_FILE = "training_tasks.py"


def request_tasks_reparse() -> bool:
    """Queue a parse of ``dags/training_tasks.py``; False when Airflow knows no Octotrain DAG
    yet (then the file's bundle is unknown) or its metadata DB cannot be reached: the periodic
    parse then picks the change up, so the request that changed the task still succeeds."""
    try:
        return _request_reparse()
    except SQLAlchemyError as error:
        log.warning("could not ask Airflow to parse the training tasks' DAGs: %s", error)
        return False


def _request_reparse() -> bool:
    with create_session() as session:
        known = session.execute(
            select(DagModel.bundle_name, DagModel.relative_fileloc)
            .where(DagModel.dag_id.startswith("octotrain_"), DagModel.relative_fileloc.is_not(None))
            .order_by(DagModel.dag_id.startswith(DAG_ID_PREFIX).desc())
            .limit(1)
        ).first()
        if known is None:
            return False
        bundle, sibling = known
        relative = str(PurePosixPath(sibling).with_name(TASKS_DAG_FILE))
        key = hashlib.md5(f"{bundle}:{relative}".encode()).hexdigest()
        if session.get(DagPriorityParsingRequest, key) is None:
            session.add(DagPriorityParsingRequest(bundle_name=bundle, relative_fileloc=relative))
    log.info("asked Airflow to parse %s of bundle %s", relative, bundle)
    return True


def retire_task_dag(dag_id: str, *, reason: str) -> bool:
    """Make a deleted task's DAG untriggerable now, and leave none of its runs waiting.

    Without this the DAG stays triggerable until the next parse, and a run started meanwhile
    waits on a DAG its task runner cannot find. The DAG is deleted from Airflow's metadata
    DB as Airflow's ``DELETE /api/v2/dags/{dag_id}`` does (its trigger then answers 404, and a
    later task that gets the same id on SQLite starts afresh). While task instances of it still
    run, Airflow refuses that: the DAG is then paused and marked stale (what the dag-processor
    does to a DAG gone from its file), and each queued or running run is marked failed as
    Airflow's "mark failed" does, with ``reason`` as its note. A parse is requested either way.

    False when Airflow's metadata DB cannot be reached: the next parse retires the DAG, and a
    run that starts meanwhile fails at once (``dags/deleted_tasks.py``).
    """
    try:
        with create_session() as session:
            if session.get(DagModel, dag_id) is not None:
                _retire(session, dag_id, reason)
    except SQLAlchemyError as error:
        log.warning("could not retire the DAG %s in Airflow: %s", dag_id, error)
        return False
    request_tasks_reparse()
    return True


def _retire(session: Session, dag_id: str, reason: str) -> None:
    try:
        with session.begin_nested():
            delete_dag(dag_id, session=session)
        return
    except AirflowException:  # task instances still run
        pass
    found = session.get(DagModel, dag_id)
    assert found is not None
    found.is_paused = True
    found.is_stale = True
    runs = session.scalars(
        select(DagRun).where(
            DagRun.dag_id == dag_id, DagRun.state.in_((DagRunState.QUEUED, DagRunState.RUNNING))
        )
    ).all()
    dag = SerializedDagModel.get_dag(dag_id, session=session) if runs else None
    for run in runs:
        if dag is not None:
            set_dag_run_state_to_failed(dag=dag, run_id=run.run_id, commit=True, session=session)
        else:
            run.set_state(DagRunState.FAILED)
        run.note = reason
