"""Hyper-parameter sweeps over REST: create one on a task (judged whole, every problem named by
its field), list a task's sweeps, show one with its trials, start it (a run of the sweeps' DAG in
Airflow), stop it, read its trials' reported curves, and start one run of the task with its best
trial's parameters ("re-run best")."""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response
from sqlalchemy.orm import Session

from hooks.airflow.airflow_compat import may_trigger_dag
from hooks.airflow.dag_runs import run_id_for_request, trigger_dag_run
from hooks.storage.catalog import default_catalog
from hooks.sweeps.sweep_context import sweep_context
from hooks.sweeps.sweep_report import sweep_curves, sweep_summary, sweep_view
from octotrain.catalog.access import Forbidden, Scope
from octotrain.catalog.models import Sweep
from octotrain.contracts import SWEEPS_DAG_ID, dag_id_for
from octotrain.errors import Conflict
from octotrain.sweep_views import SweepCurves, SweepSummary, SweepView
from octotrain.sweeps import Sweeps
from octotrain.task_spec import MAX_VERSION_NUMBER
from plugins.api.auth import CurrentScope
from plugins.api.task_routes import RunRequest, StartedRunView, TaskId, started_run

SweepId = Annotated[int, Path(ge=1, le=MAX_VERSION_NUMBER)]

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(tags=["sweeps"], dependencies=[Depends(get_user)])


@router.post(
    "/tasks/{task_id}/sweeps",
    status_code=201,
    summary="Create a sweep of the task (and start it with start=true)",
)
def create_sweep(
    task_id: TaskId,
    scope: CurrentScope,
    user: Annotated[BaseUser, Depends(get_user)],
    document: Annotated[Any, Body()],
    start: Annotated[bool, Query(description="Start it at once")] = False,
) -> SweepView:
    """422 naming each field that breaks a rule: a parameter the algorithm does not declare, a
    range outside its bounds, an objective chart the task's runs never wrote, a budget of zero,
    more trials at once than the project's quota holds. Nothing is saved then, nor when the
    start (``start=true``) fails."""
    catalog = default_catalog()
    with catalog.session() as session:
        sweeps = Sweeps(session, scope)
        sweep = sweeps.create(task_id, document, lambda task: sweep_context(session, task))
        session.commit()
        if start:
            try:
                _start(session, sweep, scope, user)
            except Exception:
                sweeps.delete_unstarted(sweep.id)  # a request that failed leaves no sweep
                session.commit()
                raise
        return sweep_view(session, sweep, catalog.url)


@router.get("/tasks/{task_id}/sweeps", summary="The task's sweeps, newest first")
def list_sweeps(task_id: TaskId, scope: CurrentScope) -> list[SweepSummary]:
    catalog = default_catalog()
    with catalog.session() as session:
        return [
            sweep_summary(session, sweep, catalog.url)
            for sweep in Sweeps(session, scope).list(task_id)
        ]


@router.get("/sweeps/{sweep_id}", summary="A sweep, its result and every trial")
def get_sweep(sweep_id: SweepId, scope: CurrentScope) -> SweepView:
    catalog = default_catalog()
    with catalog.session() as session:
        return sweep_view(session, Sweeps(session, scope).get(sweep_id), catalog.url)


@router.get(
    "/sweeps/{sweep_id}/curves",
    summary="Each trial's reported objective by step, as the pruner saw it",
)
def get_sweep_curves(sweep_id: SweepId, scope: CurrentScope) -> SweepCurves:
    catalog = default_catalog()
    with catalog.session() as session:
        return sweep_curves(Sweeps(session, scope).get(sweep_id), catalog.url)


@router.post(
    "/sweeps/{sweep_id}/start",
    status_code=202,
    summary="Start the sweep: a run of the sweeps' DAG in Airflow drives it",
)
def start_sweep(
    sweep_id: SweepId, scope: CurrentScope, user: Annotated[BaseUser, Depends(get_user)]
) -> SweepView:
    """409 when it was started before (a sweep starts once)."""
    catalog = default_catalog()
    with catalog.session() as session:
        sweep = Sweeps(session, scope).get(sweep_id)
        _start(session, sweep, scope, user)
        return sweep_view(session, sweep, catalog.url)


@router.post(
    "/sweeps/{sweep_id}/stop",
    status_code=202,
    summary="Stop the sweep: its running trials are stopped, then it ends stopped",
)
def stop_sweep(sweep_id: SweepId, scope: CurrentScope) -> SweepView:
    catalog = default_catalog()
    with catalog.session() as session:
        sweep = Sweeps(session, scope).request_stop(sweep_id)
        session.commit()
        return sweep_view(session, sweep, catalog.url)


@router.post(
    "/sweeps/{sweep_id}/rerun-best",
    status_code=201,
    summary="Start one run of the task with the best trial's parameters",
    responses={200: {"model": StartedRunView, "description": "A retried request id's run"}},
)
def rerun_best(
    sweep_id: SweepId,
    scope: CurrentScope,
    user: Annotated[BaseUser, Depends(get_user)],
    request: Request,
    response: Response,
    body: Annotated[RunRequest | None, Body()] = None,
) -> StartedRunView:
    """The run is an ordinary run of the task (not a trial); ``conf`` may change other
    settings. 409 while no trial has finished with a value."""
    catalog = default_catalog()
    with catalog.session() as session:
        sweep = Sweeps(session, scope).get(sweep_id)
        best = sweep_summary(session, sweep, catalog.url).best
        if best is None:
            raise Conflict(f"sweep {sweep.name} has no finished trial yet to run again")
        wanted = body or RunRequest()
        rerun = wanted.model_copy(update={"conf": best.parameters | wanted.conf})
        return started_run(session, sweep.task, rerun, scope, user, request, response)


def _start(session: Session, sweep: Sweep, scope: Scope, user: BaseUser) -> None:
    """Trigger the sweeps' DAG for ``sweep`` as ``user``, who must be allowed to start runs
    of the task's DAG too (the trials are its runs); recorded running before Airflow is asked,
    forgotten if Airflow refuses."""
    if not may_trigger_dag(user=user, dag_id=dag_id_for(sweep.task_id)):
        raise Forbidden(f"you may not trigger runs of DAG {dag_id_for(sweep.task_id)} in Airflow")
    request_id = f"sweep-{sweep.id}"
    sweeps = Sweeps(session, scope)
    sweeps.start(sweep.id, airflow_run_id=run_id_for_request(request_id))
    session.commit()
    try:
        trigger_dag_run(
            dag_id=SWEEPS_DAG_ID, user=user, conf={"sweep_id": sweep.id}, request_id=request_id
        )
    except Exception:
        session.rollback()
        sweeps.forget_start(sweep.id)
        session.commit()
        raise
    session.refresh(sweep)
