"""Training tasks over REST: create (judged by every rule of the manual, all problems in one
answer), check without saving, list, show, change, copy, delete, their runs, starting a run
(validated, then triggered in Airflow; idempotent with a request id), stopping one, and
resuming a failed or stopped one from its checkpoint.

After a task is created, changed or deleted, Airflow is asked to parse the tasks' DAG file at
once, so the DAG follows within seconds."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Annotated, Any, Literal

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from hooks.airflow.dag_parsing import request_tasks_reparse, retire_task_dag
from hooks.airflow.dag_runs import (
    REQUEST_ID_PATTERN,
    add_run_note,
    run_id_for_request,
    trigger_dag_run,
)
from hooks.run_stops import request_stop
from hooks.runs.run_resume import why_not_resumed, with_resumable
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.access import Scope
from octotrain.catalog.documents import TaskCopyDocument
from octotrain.catalog.last_run_status import LastRunStatus
from octotrain.catalog.models import TrainingTask
from octotrain.catalog.views import RunView, TaskView
from octotrain.contracts import dag_id_for
from octotrain.errors import Conflict, InvalidInput, InvalidTrigger
from octotrain.planning import resolve_run
from octotrain.run_lifecycle import find_run, forget_trigger, record_triggered
from octotrain.run_settings import RESUME_SETTING
from octotrain.secrets import held_apart
from octotrain.task_spec import MAX_VERSION_NUMBER, TaskSpec
from octotrain.tasks import TASK_SORTS, Tasks
from plugins.api.auth import CurrentScope
from plugins.api.bodies import json_body
from plugins.api.paging import CurrentWindow, collection_of

TaskId = Annotated[int, Path(ge=1, le=MAX_VERSION_NUMBER)]
RunId = Annotated[int, Path(ge=1, le=MAX_VERSION_NUMBER)]
Document = Annotated[Any, Body()]

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(tags=["tasks"], dependencies=[Depends(get_user)])


class TaskCheckView(BaseModel):
    """A task document that breaks no rule, with what the platform derives from it."""

    valid: bool
    container_user: str
    parameters: dict[str, Any]
    env: dict[str, str]


TaskCollection = collection_of("tasks", TaskView)
RunCollection = collection_of("runs", RunView)
# The ``order_by`` values of the task list: a column, ``-`` in front for descending.
TaskOrder = StrEnum(  # type: ignore[misc]
    "TaskOrder",
    {
        f"{key}{way}": f"{sign}{key}"
        for key in TASK_SORTS
        for way, sign in (("", ""), ("_descending", "-"))
    },
)
BY_ID = TaskOrder("id")


@router.get(
    "/tasks",
    summary="Training tasks of your projects, with their last run",
    response_model=TaskCollection,
)
def list_tasks(
    scope: CurrentScope,
    window: CurrentWindow,
    project: Annotated[
        str | None, Query(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f]+$")
    ] = None,
    status: Annotated[
        LastRunStatus | None, Query(description="the last run's state, or never")
    ] = None,
    order_by: Annotated[
        TaskOrder, Query(description="a column, - in front for descending, as Airflow's")
    ] = BY_ID,
) -> Any:
    with default_catalog().session() as session:
        page = Tasks(session, scope).page(
            window, project=project, status=status, sort=str(order_by)
        )
        tasks = [TaskView.of(task, last_run=run) for task, run in page.items]
        return TaskCollection(tasks=tasks, total_entries=page.total)


@router.post(
    "/tasks",
    status_code=201,
    summary="Create a training task (its DAG appears in Airflow)",
    openapi_extra=json_body(TaskSpec),
)
def create_task(scope: CurrentScope, document: Document) -> TaskView:
    with default_catalog().session() as session:
        view = TaskView.of(Tasks(session, scope).create(document))
    request_tasks_reparse()
    return view


@router.post(
    "/tasks/check",
    summary="Judge a task document without saving it",
    openapi_extra=json_body(TaskSpec),
)
def check_task(scope: CurrentScope, document: Document) -> TaskCheckView:
    with default_catalog().session() as session:
        resolved = Tasks(session, scope).check(document)
        return TaskCheckView(
            valid=True,
            container_user=resolved.container_user or str(resolved.spec.run_as_uid),
            parameters=resolved.parameters,
            env=resolved.env,
        )


@router.get("/tasks/{task_id}", summary="One training task")
def get_task(task_id: TaskId, scope: CurrentScope) -> TaskView:
    with default_catalog().session() as session:
        return TaskView.of(Tasks(session, scope).get(task_id))


@router.patch(
    "/tasks/{task_id}",
    summary="Change a training task (merged into its document, then judged whole)",
    openapi_extra=json_body(TaskSpec, partial=True),
)
def update_task(task_id: TaskId, scope: CurrentScope, document: Document) -> TaskView:
    with default_catalog().session() as session:
        view = TaskView.of(Tasks(session, scope).update(task_id, document))
    request_tasks_reparse()
    return view


@router.post(
    "/tasks/{task_id}/copy",
    status_code=201,
    summary="Copy a training task under a new name",
    openapi_extra=json_body(TaskCopyDocument),
)
def copy_task(task_id: TaskId, scope: CurrentScope, document: Document) -> TaskView:
    with default_catalog().session() as session:
        view = TaskView.of(Tasks(session, scope).copy(task_id, document))
    request_tasks_reparse()
    return view


@router.delete(
    "/tasks/{task_id}",
    status_code=204,
    summary="Delete a task without active runs (its DAG is retired in Airflow at once)",
)
def delete_task(task_id: TaskId, scope: CurrentScope) -> Response:
    with default_catalog().session() as session:
        name = Tasks(session, scope).delete(task_id)
    retire_task_dag(
        dag_id_for(task_id), reason=f"training task '{name}' was deleted by {scope.username}"
    )
    return Response(status_code=204)


@router.get(
    "/tasks/{task_id}/runs", summary="The runs of one training task", response_model=RunCollection
)
def list_runs(
    task_id: TaskId,
    scope: CurrentScope,
    window: CurrentWindow,
    order_by: Annotated[
        Literal["id", "-id"], Query(description="id: in the order they started; -id: newest first")
    ] = "id",
) -> Any:
    with default_catalog().session() as session:
        page = Tasks(session, scope).runs_page(task_id, window, newest_first=order_by == "-id")
        store = default_object_store()
        runs = [with_resumable(store, run) for run in page.items]
        return RunCollection(runs=runs, total_entries=page.total)


@router.get("/tasks/{task_id}/runs/{run_id}", summary="One run of a training task")
def get_run(task_id: TaskId, run_id: RunId, scope: CurrentScope) -> RunView:
    with default_catalog().session() as session:
        return with_resumable(default_object_store(), Tasks(session, scope).run(task_id, run_id))


class RunRequest(BaseModel):
    """What to run: ``conf`` holds the run's settings (the DAG's Params: the algorithm's
    parameters by name, ``node_count``, ``priority``, ``env``, ``input_models``), each
    defaulting to the saved task. A retry with the same ``request_id`` gets the same run."""

    model_config = ConfigDict(extra="forbid")

    request_id: str | None = Field(default=None, pattern=REQUEST_ID_PATTERN)
    conf: dict[str, Any] = Field(default_factory=dict)


class StartedRunView(BaseModel):
    """The run a trigger started (or, for a retried request id, had started)."""

    run: RunView
    dag_id: str
    dag_run_id: str
    airflow_state: str
    created: bool


@router.post(
    "/tasks/{task_id}/runs",
    status_code=201,
    summary="Start a run now: judged with its conf, then triggered in Airflow",
    responses={200: {"model": StartedRunView, "description": "A retried request id's run"}},
)
def start_run(
    task_id: TaskId,
    scope: CurrentScope,
    user: Annotated[BaseUser, Depends(get_user)],
    request: Request,
    response: Response,
    body: Annotated[RunRequest | None, Body()] = None,
) -> StartedRunView:
    with default_catalog().session() as session:
        task = Tasks(session, scope).get(task_id)
        return started_run(session, task, body or RunRequest(), scope, user, request, response)


@router.post(
    "/tasks/{task_id}/runs/{run_id}/resume",
    status_code=201,
    summary="Resume a failed or stopped run from its checkpoint: a new run of the task",
    responses={200: {"model": StartedRunView, "description": "A retried request id's run"}},
)
def resume_run(
    task_id: TaskId,
    run_id: RunId,
    scope: CurrentScope,
    user: Annotated[BaseUser, Depends(get_user)],
    request: Request,
    response: Response,
    body: Annotated[RunRequest | None, Body()] = None,
) -> StartedRunView:
    """The new run's nodes restore the earlier run's checkpoint (docs/how-to/resume-a-run.md); its
    ``conf`` may change what a run may (``resume_from`` is set here). 409 when the run is
    active or succeeded, never started, or left no checkpoint."""
    wanted = body or RunRequest()
    with default_catalog().session() as session:
        tasks = Tasks(session, scope)
        earlier = tasks.run(task_id, run_id)
        refused = why_not_resumed(default_object_store(), earlier)
        if refused is not None:
            raise Conflict(refused)
        resuming = wanted.model_copy(update={"conf": wanted.conf | {RESUME_SETTING: run_id}})
        return started_run(session, tasks.get(task_id), resuming, scope, user, request, response)


def started_run(
    session: Session,
    task: TrainingTask,
    wanted: RunRequest,
    scope: Scope,
    user: BaseUser,
    request: Request,
    response: Response,
) -> StartedRunView:
    """Judge the task with the run's conf, trigger it in Airflow as ``user``, record it.

    Secret values in the conf are held apart (``octotrain.secrets``): the catalog's run keeps
    them, recorded before Airflow is asked (under a request id chosen here when the client gave
    none), and Airflow's conf carries ``***``. A trigger Airflow refuses leaves no run behind."""
    try:
        resolved = resolve_run(session, task, conf=wanted.conf)
    except InvalidInput as refused:
        raise InvalidTrigger(refused.problems) from None
    conf, held = held_apart(wanted.conf)
    request_id = wanted.request_id
    if request_id is None and any(held.values()):
        request_id = uuid.uuid4().hex
    recorded: dict[str, Any] = {
        "triggered_by": scope.username,
        "node_count": resolved.spec.node_count,
        "resumed_from": wanted.conf.get(RESUME_SETTING),
    }
    queued_here = None
    if request_id is not None:
        run_id = run_id_for_request(request_id)
        if find_run(session, task.id, run_id) is None:
            record_triggered(session, task.id, run_id, secrets=held, **recorded)
            session.commit()  # validate, in another process, reads the held secrets
            queued_here = run_id
    try:
        triggered = trigger_dag_run(
            dag_id=dag_id_for(task.id),
            user=user,
            conf=conf,
            request_id=request_id,
            from_ui="referer" in request.headers,
        )
    except Exception:
        if queued_here is not None:
            session.rollback()
            forget_trigger(session, task.id, queued_here)
            session.commit()
        raise
    run = record_triggered(session, task.id, triggered.dag_run_id, **recorded)
    view = RunView.of(run)
    response.status_code = 201 if triggered.created else 200
    return StartedRunView(
        run=view,
        dag_id=triggered.dag_id,
        dag_run_id=triggered.dag_run_id,
        airflow_state=triggered.state,
        created=triggered.created,
    )


class RunStopView(BaseModel):
    """A stop under way: the run as it is now (it ends ``stopped`` once its nodes have), what
    its nodes' supplemental logs will say, and whether its Airflow run got the note saying
    who stopped it (not when an earlier stop or a node's failure is ending it)."""

    run: RunView
    stopping_because: str
    noted_in_airflow: bool


@router.post(
    "/tasks/{task_id}/runs/{run_id}/stop",
    status_code=202,
    summary="Stop an active run: every node stops (grace period), its logs are kept",
)
def stop_run(
    task_id: TaskId,
    run_id: RunId,
    scope: CurrentScope,
    user: Annotated[BaseUser, Depends(get_user)],
) -> RunStopView:
    with default_catalog().session() as session:
        run = Tasks(session, scope).run_to_stop(task_id, run_id=run_id)
        stop = request_stop(run, by=scope.username)
        noted = stop.note is not None and add_run_note(
            dag_id=dag_id_for(task_id),
            run_id=run.airflow_run_id,
            note=stop.note,
            user_id=user.get_id(),
        )
        return RunStopView(
            run=RunView.of(run), stopping_because=stop.flag.text(), noted_in_airflow=noted
        )
