"""Asking Airflow's dag-processor to parse the training tasks' DAG file now, after a task was
created, changed or deleted from the plugin, so that its DAG (and a new schedule or trigger
form) shows up within seconds rather than at the next periodic parse. This is what Airflow's
``PUT /api/v2/parseDagFile/{file_token}`` does: a priority parsing request in the metadata DB.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import PurePosixPath

from airflow.models.dag import DagModel
from airflow.models.dagbag import DagPriorityParsingRequest
from airflow.utils.session import create_session
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

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
