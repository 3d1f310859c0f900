"""Starting a run of a training task's DAG from inside Airflow's api-server (the plugin's
``POST /api/v1/tasks/{id}/runs``), the way Airflow's own ``POST /api/v2/dags/{dag_id}/dagRuns``
does it: the user must be allowed to trigger the DAG, Airflow validates the conf against the
DAG's Params (its message is returned as is) and creates the run in its metadata DB.

A request id makes the trigger idempotent: it becomes the Airflow run id, which Airflow keeps
unique per DAG, so a client retrying the same request gets the run it started the first time,
never a second one.

A run a user stopped gets its note here too (``add_run_note``), as Airflow's own
``PATCH …/dagRuns/{dag_run_id}`` sets one.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.sdk.exceptions import ParamValidationError
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from hooks.airflow.airflow_compat import (
    create_manual_run,
    dag_model,
    find_dag_run,
    may_trigger_dag,
    metadata_session,
    run_note,
    set_run_note,
)
from hooks.airflow.airflow_rest import REQUEST_RUN_PREFIX
from octotrain.abort_flags import appended_note
from octotrain.catalog.access import Forbidden
from octotrain.errors import Conflict, FieldProblem, InvalidTrigger, NotFound

log = logging.getLogger(__name__)
REQUEST_ID_PATTERN = r"^[A-Za-z0-9_.~:+-]{1,100}$"


@dataclass(frozen=True)
class TriggeredRun:
    """An Airflow run of a DAG; ``created`` is False when a retried request found it."""

    dag_id: str
    dag_run_id: str
    state: str
    conf: dict[str, Any]
    created: bool


def run_id_for_request(request_id: str) -> str:
    """The Airflow run id a request id stands for (Airflow's run-id characters only)."""
    if not re.fullmatch(REQUEST_ID_PATTERN, request_id):
        raise InvalidTrigger.one(
            "request_id", "must be 1-100 letters, digits or any of _ . ~ : + -"
        )
    return REQUEST_RUN_PREFIX + request_id


def trigger_dag_run(
    *,
    dag_id: str,
    user: BaseUser,
    conf: dict[str, Any],
    request_id: str | None = None,
    from_ui: bool = False,
) -> TriggeredRun:
    """Create a run of ``dag_id`` now (no logical date), or find the one ``request_id`` made."""
    if not may_trigger_dag(user=user, dag_id=dag_id):
        raise Forbidden(f"you may not trigger runs of DAG {dag_id} in Airflow")
    run_id = run_id_for_request(request_id) if request_id else None
    try:
        with metadata_session() as session:
            return _found(session, dag_id, run_id, conf) or _create(
                session, dag_id, run_id, conf, user, from_ui
            )
    except IntegrityError:
        # The same request id, retried while its first try was creating the run.
        with metadata_session() as session:
            found = _found(session, dag_id, run_id, conf)
        if found is None:
            raise
        return found


def _found(
    session: Session, dag_id: str, run_id: str | None, conf: dict[str, Any]
) -> TriggeredRun | None:
    if run_id is None:
        return None
    run = find_dag_run(session, dag_id=dag_id, run_id=run_id)
    if run is None:
        return None
    if (run.conf or {}) != conf:
        raise Conflict(
            f"request id {run_id.removeprefix(REQUEST_RUN_PREFIX)!r} already started run "
            f"{run_id} with other settings; use a new request id for a new run"
        )
    return TriggeredRun(dag_id, run.run_id, str(run.state), dict(run.conf or {}), created=False)


def _create(
    session: Session,
    dag_id: str,
    run_id: str | None,
    conf: dict[str, Any],
    user: BaseUser,
    from_ui: bool,
) -> TriggeredRun:
    model = dag_model(session, dag_id=dag_id)
    if model is None or model.is_stale:
        raise Conflict(
            f"Airflow has not parsed DAG {dag_id} yet (a new task's DAG appears within seconds); "
            "try again shortly"
        )
    if model.has_import_errors:
        raise Conflict(f"DAG {dag_id} has import errors in Airflow and cannot be triggered")
    try:
        run = create_manual_run(
            session, dag_id=dag_id, run_id=run_id, conf=conf, user=user, from_ui=from_ui
        )
    except (ParamValidationError, ValueError) as error:
        raise InvalidTrigger([FieldProblem("conf", f"Airflow refused it: {error}")]) from None
    if run is None:
        raise NotFound(f"Airflow has no serialized DAG {dag_id}")
    session.flush()
    return TriggeredRun(dag_id, run.run_id, str(run.state), dict(run.conf or {}), created=True)


def add_run_note(*, dag_id: str, run_id: str, note: str, user_id: str | None) -> bool:
    """Add ``note`` to the run's note in Airflow's metadata DB (after what it said, which
    stays), as user ``user_id``; False when Airflow has no such run or its metadata DB cannot
    be reached: what the note records (a stop) has happened either way, so it is not undone."""
    try:
        with metadata_session() as session:
            run = find_dag_run(session, dag_id=dag_id, run_id=run_id)
            if run is None:
                return False
            set_run_note(run, note=appended_note(run_note(run), note), user_id=user_id)
    except SQLAlchemyError as error:
        log.warning("could not add a note to run %s of DAG %s: %s", run_id, dag_id, error)
        return False
    return True
