"""The console's pages of hyper-parameter sweeps: a task's sweep form
(``/ui/tasks/{task_id}/sweeps/new``: a row per parameter of the task's algorithm, the objective,
the search, the budget, trials at once, early stopping; "Create and start" posts to the REST API,
which judges it) and a sweep's page (``/ui/sweeps/{sweep_id}``: its state and result, its trials
and their charts). What changes (the trials, their curves) is read by the pages' scripts
(``sweep_form.js``, ``sweep.js``) from the REST API (``plugins/api/sweep_routes.py``): the sweep in
one request, its trials' curves in another, whatever the number of trials.
"""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParameter
from fastapi.responses import HTMLResponse

from hooks.storage.catalog import default_catalog
from hooks.sweeps.sweep_context import sweep_context
from octotrain.catalog.views import TaskView
from octotrain.sweep_spec import MAX_CONCURRENCY, MAX_TRIALS
from octotrain.sweeps import Sweeps
from octotrain.task_choices import task_form_choices
from octotrain.task_spec import MAX_VERSION_NUMBER
from octotrain.tasks import Tasks
from plugins.api.auth import CurrentScope
from plugins.ui.pages import render
from plugins.ui.task_shown import shown_task_document

TaskId = Annotated[int, PathParameter(ge=1, le=MAX_VERSION_NUMBER)]
SweepId = Annotated[int, PathParameter(ge=1, le=MAX_VERSION_NUMBER)]

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(get_user)])


@router.get("/tasks/{task_id}/sweeps/new", response_class=HTMLResponse)
def new_sweep_page(task_id: TaskId, request: Request, scope: CurrentScope) -> HTMLResponse:
    """The sweep form of a task of the user's projects: its algorithm's parameters with the
    task's values (secrets masked: a secret is never swept from here), and the charts its runs
    write (those an objective may name) as suggestions."""
    with default_catalog().session() as session:
        task = Tasks(session, scope).get(task_id)
        choices = task_form_choices(session, task.project)
        view = TaskView.of(task)
        charts = dict(sweep_context(session, task).charts)
        names = {sweep.name for sweep in Sweeps(session, scope).list(task_id)}
    algorithm = next(
        (item for item in choices["algorithms"] if item["name"] == view.algorithm), None
    )
    shown = shown_task_document(view.document, algorithm)
    declared = {item["name"]: item for item in (algorithm or {}).get("parameters", [])}
    parameters: list[dict[str, Any]] = [
        {
            "name": parameter.name,
            "type": parameter.type,
            "value": parameter.value,
            "secret": parameter.secret,
            "description": parameter.description,
            "declaration": declared.get(parameter.name, {}),
        }
        for parameter in shown.parameters
        if parameter.name in declared  # not one saved for an algorithm that no longer has it
    ]
    number = len(names) + 1
    while f"sweep-{number}" in names:
        number += 1
    return render(
        "sweep_form.html",
        request,
        task=view,
        parameters=parameters,
        charts=charts,
        suggested_name=f"sweep-{number}",
        max_trials=MAX_TRIALS,
        max_concurrency=MAX_CONCURRENCY,
    )


@router.get("/sweeps/{sweep_id}", response_class=HTMLResponse)
def sweep_page(sweep_id: SweepId, request: Request, scope: CurrentScope) -> HTMLResponse:
    """A sweep of a task of the user's projects (404 for another's, as the API answers)."""
    with default_catalog().session() as session:
        sweep = Sweeps(session, scope).get(sweep_id)
        task = TaskView.of(sweep.task)
        name, spec = sweep.name, dict(sweep.spec)
    return render("sweep.html", request, task=task, sweep_id=sweep_id, name=name, spec=spec)
