"""The plugin's pages inside the Airflow UI: server-rendered HTML and a small script that reads
the REST API (``plugins/api``) with the user's Airflow session cookie, so that every page and
every call behind it requires Airflow's auth, as the API does.

``/ui/dags/{dag_id}/runs/{run_id}/logs``, ``…/metrics`` and ``…/resources`` are the "Logs",
"Metrics" and "Resources" tabs of a DAG run of a training task (``external_views`` in
``plugins/octotrain_plugin.py``): Airflow fills in the ids. Airflow 3 shows a plugin's DAG run
tabs on the runs of every DAG (``external_views`` cannot name the DAGs), so a tab of a run that
is not a training run answers a page that says so, not an API error.

Links into Airflow's own UI are ``<a target="_top">`` with the href under Airflow's root
(``airflow`` in the templates): ``common.js`` hands a plain click on one to Airflow's router,
which the sandbox of Airflow's iframe would otherwise refuse to navigate to.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import jinja2
from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParameter
from fastapi.responses import FileResponse, HTMLResponse
from pydantic import BeforeValidator

from hooks.storage.catalog import default_catalog
from octotrain.catalog.access import Scope
from octotrain.catalog.last_run_status import LastRunStatus
from octotrain.catalog.models import Run, RunState, TrainingTask
from octotrain.catalog.paging import Page as ListedPage
from octotrain.catalog.projects import Projects
from octotrain.catalog.views import RunView, TaskView
from octotrain.console_urls import CONSOLE_ROUTE, URL_PREFIX
from octotrain.contracts import task_id_from_dag_id
from octotrain.errors import NotFound
from octotrain.restarts import DEFAULT_MAX_NODE_RESTARTS, MAX_NODE_RESTARTS
from octotrain.run_lifecycle import ACTIVE_RUN_STATES, find_run
from octotrain.secrets import SENSITIVE_WORDS
from octotrain.task_choices import task_form_choices
from octotrain.task_spec import MAX_VERSION_NUMBER
from octotrain.tasks import Tasks
from octotrain.time_limits import MAX_LIMIT_SECONDS
from plugins.api.auth import CurrentScope
from plugins.ui.task_list import (
    FIFTY_PER_PAGE,
    MAX_PAGE,
    PAGE_SIZES,
    SORT_BY_ID,
    ListQuery,
    PageSize,
    TaskSort,
    page_count,
    page_from,
    page_links,
    window_of,
)
from plugins.ui.task_shown import shown_task_document

HERE = Path(__file__).parent
STATIC = HERE / "static"
# name → (file, media type); ECharts comes from npm (plugins/ui/package-lock.json, `make sync`)
STATIC_FILES = {
    "common.js": (STATIC / "common.js", "text/javascript"),
    "logs.js": (STATIC / "logs.js", "text/javascript"),
    "charts.js": (STATIC / "charts.js", "text/javascript"),
    "chart_theme.js": (STATIC / "chart_theme.js", "text/javascript"),
    "compare.js": (STATIC / "compare.js", "text/javascript"),
    "smoothing.js": (STATIC / "smoothing.js", "text/javascript"),
    "task_form.js": (STATIC / "task_form.js", "text/javascript"),
    "task_detail.js": (STATIC / "task_detail.js", "text/javascript"),
    "run.js": (STATIC / "run.js", "text/javascript"),
    "sweep_form.js": (STATIC / "sweep_form.js", "text/javascript"),
    "sweep.js": (STATIC / "sweep.js", "text/javascript"),
    "progress.js": (STATIC / "progress.js", "text/javascript"),
    "catalog.js": (STATIC / "catalog.js", "text/javascript"),
    "algorithm_form.js": (STATIC / "algorithm_form.js", "text/javascript"),
    "pages.css": (STATIC / "pages.css", "text/css"),
    "nav_icon_light.svg": (STATIC / "nav_icon_light.svg", "image/svg+xml"),
    "nav_icon_dark.svg": (STATIC / "nav_icon_dark.svg", "image/svg+xml"),
    "echarts.min.js": (HERE / "node_modules/echarts/dist/echarts.min.js", "text/javascript"),
    # Swagger UI of the API's interactive document (plugins/api/openapi_routes.py).
    "swagger-ui-bundle.js": (
        HERE / "node_modules/swagger-ui-dist/swagger-ui-bundle.js",
        "text/javascript",
    ),
    "swagger-ui.css": (HERE / "node_modules/swagger-ui-dist/swagger-ui.css", "text/css"),
}
_templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


def _utc_iso(moment: datetime) -> str:
    """``moment`` for ``<time datetime>``: common.js shows it in Airflow's format and timezone;
    the catalog keeps naive UTC times, which a browser would read as local ones."""
    aware = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return aware.isoformat().replace("+00:00", "Z")


_templates.filters["iso"] = _utc_iso
# Below this many hours an amount of usage is shown in minutes (or seconds): "0.00 h" says
# nothing of a short run.
SHORT_HOURS = 0.1


def usage_amount(hours: float, unit: str = "") -> str:
    """An amount of usage as people read it: ``4.00 node-hours``, or for a short run ``2.4
    node-minutes``, ``42 node-seconds``; ``unit`` "h" gives ``0.50 h``, ``2.4 min``, ``42 s``,
    and no unit a table's cell under an "(h)" header: ``0.50``, ``2.4 min``, ``42 s``."""
    if hours == 0 or hours >= SHORT_HOURS:
        return f"{hours:.2f} {unit}".rstrip()
    minutes = hours * 60
    if unit.endswith("hours"):  # node-hours → node-minutes
        named = unit.removesuffix("hours")
        return (
            f"{minutes:.1f} {named}minutes"
            if minutes >= 1
            else f"{minutes * 60:.0f} {named}seconds"
        )
    return f"{minutes:.1f} min" if minutes >= 1 else f"{minutes * 60:.0f} s"


_templates.filters["usage_amount"] = usage_amount


def run_duration(started_at: datetime, ended_at: datetime) -> str:
    """How long an ended run took, as the task page says it: "42 s", "3 min", "2 h 5 min"."""
    seconds = max(0, round((ended_at - started_at).total_seconds()))
    if seconds < 120:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60} min"


_templates.filters["run_duration"] = run_duration
# The task rules' limits, for the form's hints and the task page's defaults.
_templates.globals.update(
    default_node_restarts=DEFAULT_MAX_NODE_RESTARTS,
    max_node_restarts=MAX_NODE_RESTARTS,
    max_limit_seconds=MAX_LIMIT_SECONDS,
    # The words that mark a secret's name: a page masks such values wherever Airflow shows them.
    sensitive_words=SENSITIVE_WORDS,
)
# The list shows a task's latest runs; its page shows them all.
RECENT_RUNS = 3
AirflowId = Annotated[str, PathParameter(min_length=1, max_length=250)]
TaskId = Annotated[int, PathParameter(ge=1, le=MAX_VERSION_NUMBER)]
RUN_STATES = tuple(str(state) for state in RunState)

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(get_user)])


def _run_page(
    template: str, dag_id: str, run_id: str, request: Request, scope: Scope
) -> HTMLResponse:
    """Page ``template`` of one run of a training task of the user's projects; for any other
    DAG run, or one the user may not see, a page saying why there is nothing to show."""
    try:
        task_id = task_id_from_dag_id(dag_id)
    except ValueError:
        return _nothing_to_show(
            request,
            "This DAG run is not an Octotrain training run",
            f"{dag_id} is not the DAG of a training task. Airflow shows the Metrics, Resources "
            "and Logs tabs on the runs of every DAG; only training runs have them.",
        )
    with default_catalog().session() as session:
        try:
            task = Tasks(session, scope).get(task_id)
        except NotFound:
            return _nothing_to_show(
                request,
                "No training run to show",
                f"Training task {task_id} does not exist (any more), or it is in a project you "
                "are not a member of.",
            )
        run = find_run(session, task.id, run_id)
        if run is None:
            return _nothing_to_show(
                request,
                "No training run to show",
                f"Training task '{task.name}' has no run {run_id} yet: a run started from "
                "Airflow is recorded when its validate task starts.",
            )
        return render(template, request, task=task, run=run, live=run.state in ACTIVE_RUN_STATES)


def _nothing_to_show(request: Request, heading: str, reason: str) -> HTMLResponse:
    """A page for the tab of a DAG run that has none of Octotrain's: it is shown inside
    Airflow's UI, where an API error would be the browser's raw JSON viewer."""
    return render("no_training_run.html", request, status_code=404, heading=heading, reason=reason)


@router.get("/dags/{dag_id}/runs/{run_id}/logs", response_class=HTMLResponse)
def logs_page(
    dag_id: AirflowId, run_id: AirflowId, request: Request, scope: CurrentScope
) -> HTMLResponse:
    return _run_page("logs.html", dag_id, run_id, request, scope)


@router.get("/dags/{dag_id}/runs/{run_id}/metrics", response_class=HTMLResponse)
def metrics_page(
    dag_id: AirflowId, run_id: AirflowId, request: Request, scope: CurrentScope
) -> HTMLResponse:
    """Up to six charts of the training's metrics, live while it runs."""
    return _run_page("metrics.html", dag_id, run_id, request, scope)


@router.get("/dags/{dag_id}/runs/{run_id}/resources", response_class=HTMLResponse)
def resources_page(
    dag_id: AirflowId, run_id: AirflowId, request: Request, scope: CurrentScope
) -> HTMLResponse:
    """CPU, memory and GPU usage of each node."""
    return _run_page("resources.html", dag_id, run_id, request, scope)


def render(
    template: str, request: Request, *, status_code: int = 200, **values: Any
) -> HTMLResponse:
    """``template`` with the plugin's root (``root``: its own pages, static files and API) and
    Airflow's (``airflow``: Airflow's pages), both as the browser reaches them."""
    root = request.scope.get("root_path", "")
    page = _templates.get_template(template).render(
        root=root, airflow=root.removesuffix(URL_PREFIX), console_route=CONSOLE_ROUTE, **values
    )
    return HTMLResponse(page, status_code=status_code)


def _any_is_none(value: object) -> object:
    """The form's "any status" choice sends an empty ``status``."""
    return value or None


@router.get("/tasks", response_class=HTMLResponse)
def tasks_page(
    request: Request,
    scope: CurrentScope,
    status: Annotated[LastRunStatus | None, BeforeValidator(_any_is_none), Query()] = None,
    q: Annotated[str, Query(max_length=64)] = "",
    sort: Annotated[TaskSort, Query()] = SORT_BY_ID,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    per_page: Annotated[PageSize, Query()] = FIFTY_PER_PAGE,
) -> HTMLResponse:
    """The "Training" entry of Airflow's navigation: the tasks of the user's projects, by
    project, each with its latest runs and their Metrics, Resources and Logs tabs; filtered
    by the last run's status (``never``: not run yet), as ``GET /tasks?status=`` is, and a
    part of the name; sorted and paged (``plugins/ui/task_list.py``)."""
    base = f"{request.scope.get('root_path', '')}/ui/tasks"
    view = ListQuery(base, q, status, sort.value, page, per_page.value)
    with default_catalog().session() as session:
        tasks = Tasks(session, scope)

        def read(number: int) -> ListedPage[tuple[TrainingTask, Run | None]]:
            return tasks.page(window_of(number, per_page.value), status=status, name_contains=q,
                              sort=view.sort, by_project=True)  # fmt: skip

        listed = read(page)
        number = min(page, page_count(listed.total, per_page.value))
        if number != page:  # past the end (the list shrank since the link was made): the last
            listed = read(number)
        shown = page_from(listed, number, per_page.value)
        ids = [task.id for task, _ in shown.tasks]
        recent, counts = tasks.recent_runs(ids, count=RECENT_RUNS), tasks.run_counts(ids)
        rows = [
            (TaskView.of(task, last_run=last), [RunView.of(run) for run in recent[task.id]],
             counts[task.id])
            for task, last in shown.tasks
        ]  # fmt: skip
        projects = [project.name for project in Projects(session, scope).list()]
    groups = [(name, [item for item in rows if item[0].project == name]) for name in projects]
    return render("tasks.html", request, groups=groups, status=status, q=q, states=RUN_STATES,
                   view=view, page=shown, page_links=page_links(shown.number, shown.count),
                   page_sizes=PAGE_SIZES)  # fmt: skip


@router.get("/tasks/new", response_class=HTMLResponse)
def new_task_page(
    request: Request,
    scope: CurrentScope,
    project: Annotated[str, Query(min_length=1, max_length=64)],
) -> HTMLResponse:
    """The manual's "Creating a training task", steps 2-7, with the project's choices."""
    with default_catalog().session() as session:
        choices = task_form_choices(session, scope.project(session, project))
    return render("task_form.html", request, choices=choices, task=None)


@router.get("/tasks/{task_id}/edit", response_class=HTMLResponse)
def edit_task_page(task_id: TaskId, request: Request, scope: CurrentScope) -> HTMLResponse:
    with default_catalog().session() as session:
        task = Tasks(session, scope).get(task_id)
        choices = task_form_choices(session, task.project)
        view = TaskView.of(task)
    return render("task_form.html", request, choices=choices, task=view)


@router.get("/tasks/{task_id}", response_class=HTMLResponse)
def task_page(task_id: TaskId, request: Request, scope: CurrentScope) -> HTMLResponse:
    """One task: its settings, its runs (each with its Logs, Metrics and Resources tabs), and
    run now (with settings for this run), stop, copy, edit and delete."""
    with default_catalog().session() as session:
        task = Tasks(session, scope).get(task_id)
        choices = task_form_choices(session, task.project)
        view = TaskView.of(task)
        runs = [RunView.of(run) for run in reversed(task.runs)]
    algorithm = next(
        (item for item in choices["algorithms"] if item["name"] == view.algorithm), None
    )
    return render("task_detail.html", request, task=view, runs=runs,
                   shown=shown_task_document(view.document, algorithm))  # fmt: skip


@router.get("/static/{name}")
def static_file(name: str) -> FileResponse:
    """The pages' own script and style (no CDN: nothing leaves the Airflow server)."""
    if name not in STATIC_FILES:
        raise NotFound(f"no static file {name!r}")
    path, media_type = STATIC_FILES[name]
    if not path.is_file():
        raise NotFound(f"{name} is not installed: run `make sync` (npm ci in plugins/ui)")
    return FileResponse(path, media_type=media_type, headers={"Cache-Control": "max-age=3600"})
