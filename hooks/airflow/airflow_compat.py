"""Every Airflow internal Octotrain uses, in this one module, each behind a function that names it.

Airflow's public interface (its "Public Interface for Airflow 3.0+" page) is ``airflow.sdk`` for
DAGs and tasks, the REST API and its Python client from outside, the ``BaseAuthManager`` and
``BaseTrigger`` interfaces, ``airflow.exceptions`` and ``airflow.utils.state``; the metadata
DB's structure and every other class are internal and may change in any release. Octotrain
keeps to the public interface except where this module says otherwise: the plugin's routes run
inside Airflow's api-server, beside its metadata DB, and do there what Airflow's own REST
routes do, which no public in-process interface offers. They do not call the REST API over
HTTP: the api-server cannot reach itself reliably (its ``[api] base_url`` is the address users
reach, often an ingress with TLS; the port it listens on is its command line's), a run would
no longer record that the UI triggered it, and retiring a DAG marks it stale, which the REST
API cannot. The command line, outside Airflow, uses the REST API (``hooks.airflow.airflow_rest``).

``tests/hooks/airflow/test_airflow_compat.py`` checks each internal's existence and signature (and
the columns used), so that an Airflow upgrade that changes one fails there first, by name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from airflow.api.common.mark_tasks import set_dag_run_state_to_failed
from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.base_auth_manager import BaseAuthManager
from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from airflow.api_fastapi.core_api.datamodels.dag_run import TriggerDAGRunPostBody
from airflow.models.dag import DagModel
from airflow.models.dagbag import DagPriorityParsingRequest, DBDagBag
from airflow.models.dagrun import DagRun
from airflow.models.serialized_dag import SerializedDagModel
from airflow.utils.session import create_session
from airflow.utils.state import DagRunState
from airflow.utils.types import DagRunTriggeredByType, DagRunType
from sqlalchemy import select
from sqlalchemy.orm import Session

SIMPLE_ADMIN_ROLE = "ADMIN"


@contextmanager
def metadata_session() -> Iterator[Session]:
    """A session of Airflow's metadata DB, committed at the end, rolled back on an error.

    Internal: ``airflow.utils.session.create_session``; the metadata DB has no public
    in-process door (the REST API is its public one)."""
    with create_session() as session:
        yield session


def auth_manager() -> BaseAuthManager[Any]:
    """The api-server's auth manager (its ``BaseAuthManager`` interface is public).

    Internal: ``airflow.api_fastapi.app.get_auth_manager``, the only way to reach it from a
    plugin's route."""
    return get_auth_manager()


def may_trigger_dag(*, user: BaseUser, dag_id: str) -> bool:
    """Whether ``user`` may start runs of ``dag_id``, as Airflow's trigger route asks.

    Internal: ``DagAccessEntity`` and ``DagDetails`` (the public ``is_authorized_dag``'s
    arguments live in an internal module)."""
    return auth_manager().is_authorized_dag(
        method="POST", access_entity=DagAccessEntity.RUN, details=DagDetails(id=dag_id), user=user
    )


def simple_user_is_admin(user: BaseUser) -> bool | None:
    """Whether ``user`` is the simple auth manager's (the embedded default's) admin; None
    when the user is not one of that manager's.

    Internal: ``SimpleAuthManagerUser`` and its ``role``; auth manager implementations are
    not public, and ``BaseUser`` has no roles."""
    if not isinstance(user, SimpleAuthManagerUser):
        return None
    return (user.role or "").upper() == SIMPLE_ADMIN_ROLE


def fab_user_may_edit_roles(manager: BaseAuthManager[Any], user: BaseUser) -> bool | None:
    """Whether ``user`` may edit the FAB auth manager's roles; None when ``manager`` is not
    FAB's. FAB is imported here: it costs a process that loads the plugin more than a second,
    and under FAB it is loaded already.

    Internal: ``FabAuthManager``, its ``is_authorized_custom_view`` and FAB's
    ``RESOURCE_ROLE``; FAB grants no role the public interface's configuration rights."""
    from airflow.providers.fab.auth_manager.fab_auth_manager import FabAuthManager

    if not isinstance(manager, FabAuthManager):
        return None
    from airflow.providers.fab.www.security.permissions import RESOURCE_ROLE

    return manager.is_authorized_custom_view(method="PUT", resource_name=RESOURCE_ROLE, user=user)


def find_dag_run(session: Session, *, dag_id: str, run_id: str) -> DagRun | None:
    """The run ``run_id`` of ``dag_id``. Internal: the ``DagRun`` model."""
    return session.scalar(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))


def unfinished_dag_runs(session: Session, *, dag_id: str) -> list[DagRun]:
    """The queued and running runs of ``dag_id``. Internal: the ``DagRun`` model."""
    unfinished = (DagRunState.QUEUED, DagRunState.RUNNING)
    query = select(DagRun).where(DagRun.dag_id == dag_id, DagRun.state.in_(unfinished))
    return list(session.scalars(query))


def set_run_note(run: DagRun, *, note: str, user_id: str | None) -> None:
    """Set the run's note to ``note``, by user ``user_id`` (None: by no one; a caller that keeps
    what the note said puts it in ``note``). Internal: ``DagRun.note`` and
    ``DagRun.dag_run_note``; the REST API's ``PATCH …/dagRuns/{run_id}`` is their public door
    from outside."""
    if run.dag_run_note is None:
        run.note = (note, user_id)
    else:
        run.dag_run_note.content = note
        run.dag_run_note.user_id = user_id


def run_note(run: DagRun) -> str | None:
    """What the run's note says. Internal: ``DagRun.dag_run_note``."""
    return run.dag_run_note.content if run.dag_run_note is not None else None


def dag_model(session: Session, *, dag_id: str) -> DagModel | None:
    """Airflow's record of ``dag_id`` (``is_stale``, ``has_import_errors``, ``is_paused``).
    Internal: the ``DagModel`` model."""
    return session.get(DagModel, dag_id)


def retire_dag_model(model: DagModel) -> None:
    """Mark the DAG stale, as the dag-processor does to a DAG gone from its file: Airflow's
    trigger then answers 404 and its scheduler starts no run of it. It is not paused: a parse
    already under way may mark it fresh again until the next one, and a run triggered then
    must start (and fail at once in ``dags/deleted_tasks.py``), not wait while paused.
    Internal: ``DagModel.is_stale``; nothing public marks a DAG stale."""
    model.is_stale = True


def fail_dag_run(session: Session, run: DagRun) -> None:
    """Mark ``run`` failed as Airflow's "mark failed" does (its unfinished task instances
    too), or only the run when Airflow has no serialized DAG of it.
    Internal: ``SerializedDagModel.get_dag``, ``set_dag_run_state_to_failed`` and
    ``DagRun.set_state``."""
    dag = SerializedDagModel.get_dag(run.dag_id, session=session)
    if dag is None:
        run.set_state(DagRunState.FAILED)
        return
    set_dag_run_state_to_failed(dag=dag, run_id=run.run_id, commit=True, session=session)


def create_manual_run(
    session: Session,
    *,
    dag_id: str,
    run_id: str | None,
    conf: dict[str, Any],
    user: BaseUser,
    from_ui: bool,
) -> DagRun | None:
    """A queued manual run of the latest version of ``dag_id``, now (no logical date), its
    ``conf`` validated against the DAG's Params as ``POST /api/v2/dags/{dag_id}/dagRuns``
    does; None when Airflow has no serialized DAG of it. Raises ``ParamValidationError`` or
    ``ValueError`` with Airflow's message when it refuses the conf.

    Internal: ``DBDagBag.get_latest_version_of_dag``, ``TriggerDAGRunPostBody.validate_context``
    and ``SerializedDAG.create_dagrun`` with ``DagRunType`` and ``DagRunTriggeredByType``."""
    dag = DBDagBag().get_latest_version_of_dag(dag_id, session=session)
    if dag is None:
        return None
    body = TriggerDAGRunPostBody(dag_run_id=run_id, logical_date=None, conf=conf)
    params = body.validate_context(dag)
    return dag.create_dagrun(
        run_id=params["run_id"],
        logical_date=params["logical_date"],
        data_interval=params["data_interval"],
        run_after=params["run_after"],
        conf=params["conf"],
        run_type=DagRunType.MANUAL,
        triggered_by=DagRunTriggeredByType.UI if from_ui else DagRunTriggeredByType.REST_API,
        triggering_user_name=user.get_name(),
        state=DagRunState.QUEUED,
        partition_key=params["partition_key"],
        partition_date=params["partition_date"],
        session=session,
    )


def dag_file_of_prefix(session: Session, *, prefix: str, preferred: str) -> tuple[str, str] | None:
    """The bundle and relative path of the file of a DAG whose id starts with ``prefix``
    (one starting with ``preferred`` first); None when Airflow knows none.
    Internal: ``DagModel.bundle_name`` and ``DagModel.relative_fileloc``."""
    found = session.execute(
        select(DagModel.bundle_name, DagModel.relative_fileloc)
        .where(DagModel.dag_id.startswith(prefix), DagModel.relative_fileloc.is_not(None))
        .order_by(DagModel.dag_id.startswith(preferred).desc())
        .limit(1)
    ).first()
    return None if found is None else (str(found[0]), str(found[1]))


def request_parse(session: Session, *, bundle: str, relative_fileloc: str) -> None:
    """Ask the dag-processor to parse the file now, as ``PUT /api/v2/parseDagFile/{token}``
    does (a request already waiting stands). Internal: ``DagPriorityParsingRequest``, whose
    key is the md5 of ``bundle:relative_fileloc``."""
    key = hashlib.md5(f"{bundle}:{relative_fileloc}".encode()).hexdigest()
    if session.get(DagPriorityParsingRequest, key) is None:
        session.add(
            DagPriorityParsingRequest(bundle_name=bundle, relative_fileloc=relative_fileloc)
        )


def register_asset_event(session: Session, *, uri: str, extra: dict[str, object]) -> bool | None:
    """Emit an event of the active Asset ``uri`` as ``POST /api/v2/assets/events`` does, which
    starts runs of the DAGs scheduled on it; None when no active Asset has that URI (no DAG
    is scheduled on it), False when Airflow refused the event.
    Internal: ``AssetModel``, ``AssetActive`` and ``asset_manager.register_asset_change``.
    Imported here: DAG files import ``hooks.airflow.dataset_assets``, and these load Airflow's
    core."""
    from airflow.assets.manager import asset_manager
    from airflow.models.asset import AssetActive, AssetModel

    asset = session.scalar(
        select(AssetModel)
        .join(AssetActive, AssetActive.uri == AssetModel.uri)
        .where(AssetModel.uri == uri)
    )
    if asset is None:
        return None
    event = asset_manager.register_asset_change(
        asset=asset, extra=extra, source_is_api=True, session=session
    )
    return event is not None


def trigger_from_task(*, dag_id: str, run_id: str, conf: dict[str, Any], note: str) -> bool:
    """Start run ``run_id`` of ``dag_id`` now from inside a running task, as Airflow's own
    ``TriggerDagRunOperator`` does (the task's supervisor asks the Execution API, with the
    task's token: no user's credentials); False when the run exists already.

    Internal: the task runner's ``SUPERVISOR_COMMS`` and its ``TriggerDagRun`` message (the
    operator reaches them by raising ``DagRunTriggerException``, which ends the task; a sweep's
    driver must trigger many runs and go on)."""
    from airflow.sdk.exceptions import ErrorType
    from airflow.sdk.execution_time.comms import ErrorResponse, TriggerDagRun
    from airflow.sdk.execution_time.task_runner import SUPERVISOR_COMMS

    answer = SUPERVISOR_COMMS.send(
        TriggerDagRun(dag_id=dag_id, run_id=run_id, conf=conf, logical_date=None, note=note)
    )
    if isinstance(answer, ErrorResponse):
        if answer.error == ErrorType.DAGRUN_ALREADY_EXISTS:
            return False
        raise RuntimeError(f"Airflow refused to start run {run_id} of {dag_id}: {answer.detail}")
    return True
