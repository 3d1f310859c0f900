"""Airflow's side of a task's DAG, from the plugin (in the api-server, beside Airflow's metadata
DB): asking the dag-processor to parse the training tasks' DAG file now, after a task was
created, changed or deleted, so that its DAG (and a new schedule or trigger form) shows up
within seconds rather than at the next periodic parse (what Airflow's
``PUT /api/v2/parseDagFile/{file_token}`` does: a priority parsing request in the metadata DB);
and retiring a deleted task's DAG at once.
"""

from __future__ import annotations

import logging
from pathlib import PurePosixPath

from sqlalchemy.exc import SQLAlchemyError

from hooks.airflow.airflow_compat import (
    dag_file_of_prefix,
    dag_model,
    fail_dag_run,
    metadata_session,
    request_parse,
    retire_dag_model,
    set_run_note,
    unfinished_dag_runs,
)
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
    with metadata_session() as session:
        known = dag_file_of_prefix(session, prefix="octotrain_", preferred=DAG_ID_PREFIX)
        if known is None:
            return False
        bundle, sibling = known
        relative = str(PurePosixPath(sibling).with_name(TASKS_DAG_FILE))
        request_parse(session, bundle=bundle, relative_fileloc=relative)
    log.info("asked Airflow to parse %s of bundle %s", relative, bundle)
    return True


def retire_task_dag(dag_id: str, *, reason: str) -> bool:
    """Make a deleted task's DAG untriggerable now, and leave none of its runs waiting.

    Without this the DAG stays triggerable until the next parse, and a run started meanwhile
    waits on a DAG its task runner cannot find. The DAG is paused and marked stale, what the
    dag-processor does to a DAG gone from its file (Airflow's trigger then answers 404), and
    each queued or running run is marked failed as Airflow's "mark failed" does, with
    ``reason`` as its note; then a parse is requested. Its record and its runs' history stay,
    as Airflow keeps them for a DAG removed from its file, and no later task gets its id
    (``training_tasks`` ids are never reused).

    The DAG is not deleted as ``DELETE /api/v2/dags/{dag_id}`` would: one file holds every
    task's DAG, and on SQLite (no row locks) a delete between the dag-processor's reading of
    that file's DAG records and its update of them kills the dag-processor (``StaleDataError``).

    False when Airflow's metadata DB cannot be reached: the next parse retires the DAG, and a
    run that starts meanwhile fails at once (``dags/deleted_tasks.py``).
    """
    try:
        with metadata_session() as session:
            found = dag_model(session, dag_id=dag_id)
            if found is not None:
                retire_dag_model(found)
                for run in unfinished_dag_runs(session, dag_id=dag_id):
                    fail_dag_run(session, run)
                    set_run_note(run, note=reason, user_id=None)
    except SQLAlchemyError as error:
        log.warning("could not retire the DAG %s in Airflow: %s", dag_id, error)
        return False
    request_tasks_reparse()
    return True
