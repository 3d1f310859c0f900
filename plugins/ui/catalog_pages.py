"""The console's catalog sections: algorithms, datasets with their versions, data caches and
model repositories with their versions and lineage, so that a new user can register everything
a first training task needs without the CLI.

Pages are rendered from the catalog services with the user's scope (only their projects);
what they change goes through the REST API (``catalog_routes``, ``lineage_routes``) from the
pages' scripts (``catalog.js``, ``algorithm_form.js``), so the API's rules and error answers
are the only ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParameter
from fastapi.responses import HTMLResponse

from hooks.launchers import metrics_of
from hooks.runs.run_metrics import chart_finals, first_node, node_charts
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.data_caches import DataCaches
from octotrain.catalog.documents import CACHE_TTL_HOURS_MAX, DEFAULT_TTL_HOURS
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.models import AlgorithmType, AnnotationStatus, Run
from octotrain.catalog.named_objects import Algorithms, Datasets, ModelRepositories
from octotrain.catalog.paging import Window
from octotrain.catalog.projects import Projects
from octotrain.catalog.usage import model_version_users
from octotrain.catalog.views import (
    AlgorithmCodeFilesView,
    AlgorithmView,
    DataCacheView,
    DatasetView,
    ModelRepositoryView,
    ModelVersionView,
)
from octotrain.contracts import dag_id_for
from octotrain.parameters import ParameterType
from octotrain.settings import get_settings
from octotrain.task_rules import USABLE_VERSION_STATUSES
from octotrain.task_spec import MAX_VERSION_NUMBER
from plugins.api.auth import CurrentScope
from plugins.ui.pages import render
from plugins.ui.task_list import MAX_PAGE, page_links

Name = Annotated[str, PathParameter(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f/]+$")]
ProjectQuery = Annotated[str, Query(min_length=1, max_length=64)]
VersionNumber = Annotated[int, PathParameter(ge=1, le=MAX_VERSION_NUMBER)]
PARAMETER_TYPES = ParameterType.__args__

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(get_user)])


@router.get("/algorithms", response_class=HTMLResponse)
def algorithms_page(request: Request, scope: CurrentScope) -> HTMLResponse:
    """The algorithms of the user's projects, by project, each linked to its edit form."""
    with default_catalog().session() as session:
        algorithms = Algorithms(session, scope, default_object_store())
        groups = [
            (project.name, [AlgorithmView.of(row) for row in algorithms.list(project.name)])
            for project in Projects(session, scope).list()
        ]
    return render("algorithms.html", request, groups=groups)


@router.get("/algorithms/new", response_class=HTMLResponse)
def new_algorithm_page(
    request: Request, scope: CurrentScope, project: ProjectQuery
) -> HTMLResponse:
    with default_catalog().session() as session:
        name = scope.project(session, project).name  # 404 for a project the user is not in
    return _algorithm_form(request, name, None)


@router.get("/algorithms/{project}/{name}", response_class=HTMLResponse)
def edit_algorithm_page(
    project: Name, name: Name, request: Request, scope: CurrentScope
) -> HTMLResponse:
    with default_catalog().session() as session:
        found = Algorithms(session, scope, default_object_store()).get(project, name)
        algorithm = AlgorithmView.of(found)
        code = [AlgorithmCodeFilesView.of(row) for row in found.code_versions]
    return _algorithm_form(request, project, algorithm, code)


def _algorithm_form(
    request: Request,
    project: str,
    algorithm: AlgorithmView | None,
    code_versions: list[AlgorithmCodeFilesView] | None = None,
) -> HTMLResponse:
    """The form, and for an algorithm its code versions with their files (newest last)."""
    saved = algorithm.model_dump(mode="json") if algorithm else None
    return render("algorithm_form.html", request, project=project, algorithm=algorithm, saved=saved,
                  algorithm_types=[str(kind) for kind in AlgorithmType],
                  parameter_types=PARAMETER_TYPES, code_versions=code_versions or [],
                  max_files_shown=SHOWN_FILES,
                  max_code_mb=get_settings().max_code_mb)  # fmt: skip


DATASETS_PER_PAGE = 25


@router.get("/datasets", response_class=HTMLResponse)
def datasets_page(
    request: Request,
    scope: CurrentScope,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
) -> HTMLResponse:
    """The datasets of every project the user is in, one table, a page of them at a time (by
    project, then name), each with its versions: new dataset, upload of a version, publish;
    each version's files to browse."""
    with default_catalog().session() as session:
        projects = [project.name for project in Projects(session, scope).list()]
        datasets = Datasets(session, scope, default_object_store())
        found = datasets.page_in_every_project(_datasets_window(page))
        pages = max(1, -(-found.total // DATASETS_PER_PAGE))
        if page > pages:  # past the last page: the last one, as the task list shows it
            page = pages
            found = datasets.page_in_every_project(_datasets_window(page))
        shown = [DatasetView.of(row) for row in found.items]
        # each version's files, to browse one by one (the first SHOWN_FILES; the zip has all)
        files = {
            (row.project.name, row.name, version.version): sorted(
                (path, int(entry["size"])) for path, entry in version.manifest.items()
            )[:SHOWN_FILES]
            for row in found.items
            for version in row.versions
        }
    return render("datasets.html", request, projects=projects, datasets=shown, files=files,
                  page=page, pages=pages, total=found.total, page_links=page_links(page, pages),
                  first=(page - 1) * DATASETS_PER_PAGE + 1 if shown else 0,
                  last=(page - 1) * DATASETS_PER_PAGE + len(shown),
                  annotation_statuses=[str(status) for status in AnnotationStatus])  # fmt: skip


def _datasets_window(page: int) -> Window:
    return Window(limit=DATASETS_PER_PAGE, offset=(page - 1) * DATASETS_PER_PAGE)


@router.get("/caches", response_class=HTMLResponse)
def caches_page(request: Request, scope: CurrentScope) -> HTMLResponse:
    """Data caches and their state; a new cache of a published or imported dataset version."""
    with default_catalog().session() as session:
        caches = DataCaches(session, scope, default_object_store())
        datasets = Datasets(session, scope, default_object_store())
        groups = [
            (
                project.name,
                [DataCacheView.of(row) for row in caches.list(project.name)],
                [
                    (dataset.name, version.version)
                    for dataset in datasets.list(project.name)
                    for version in dataset.versions
                    if version.status in USABLE_VERSION_STATUSES
                ],
            )
            for project in Projects(session, scope).list()
        ]
    return render("caches.html", request, groups=groups, default_ttl=DEFAULT_TTL_HOURS,
                  max_ttl=CACHE_TTL_HOURS_MAX)  # fmt: skip


@router.get("/models", response_class=HTMLResponse)
def models_page(request: Request, scope: CurrentScope) -> HTMLResponse:
    """Model repositories with their versions, each version linked to its lineage."""
    with default_catalog().session() as session:
        repositories = ModelRepositories(session, scope, default_object_store())
        groups = [
            (
                project.name,
                [
                    (
                        ModelRepositoryView.of(row),
                        [ModelVersionView.of(version) for version in reversed(row.versions)],
                    )
                    for row in repositories.list(project.name)
                ],
            )
            for project in Projects(session, scope).list()
        ]
    return render("models.html", request, groups=groups, dag_id_for=dag_id_for)


@router.get("/models/{project}/{repository}/{version}", response_class=HTMLResponse)
def model_version_page(
    project: Name, repository: Name, version: VersionNumber, request: Request, scope: CurrentScope
) -> HTMLResponse:
    """One model version's lineage both ways: what made it (task, run, algorithm, parameters,
    dataset and model versions) and what used it (tasks, runs, versions trained from it)."""
    with default_catalog().session() as session:
        row = ModelVersions(session, scope, default_object_store()).get(
            project, repository, version
        )
        model = ModelVersionView.of(row)
        users = model_version_users(session, row)
        files = sorted((path, int(entry["size"])) for path, entry in row.manifest.items())
        finals = final_metrics(row.made_by) if row.made_by is not None else []
    return render("model_version.html", request, project=project, model=model, users=users,
                  dag_id_for=dag_id_for, files=files[:SHOWN_FILES], file_total=len(files),
                  datasets=datasets_read(model.inputs), finals=finals)  # fmt: skip


@dataclass(frozen=True)
class FinalMetric:
    """A chart line's last value in the run that made a model version (its first node's)."""

    name: str  # "loss", or "accuracy · top1" for a line of a chart of several
    value: float
    x_name: str
    x: float


def final_metrics(run: Run) -> list[FinalMetric]:
    """The final value of each chart line the run wrote, as compare shows them."""
    reader = metrics_of(run)
    node = first_node(reader)
    shown = []
    for chart in node_charts(reader, node):
        for line, final in chart_finals(reader, node, chart).items():
            name = (
                chart.name
                if len(chart.lines) == 1 and line == chart.name
                else f"{chart.name} · {line}"
            )
            shown.append(FinalMetric(name, final.value, chart.x, final.x))
    return shown


# The files a version's page lists (a zip of all of them is one click away).
SHOWN_FILES = 500
# How a dataset version reached the training, as a version's lineage says it.
VIA_IN_WORDS = {"dataset": "a data input", "mount": "a resource mount"}


def datasets_read(inputs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """Each dataset version a model was trained from, once, with how it reached the training
    ("a data input and a resource mount", "cache c1"): an input that came both as a data input
    and as a mount is one line that says so, not two."""
    ways: dict[tuple[str, str], list[str]] = {}
    for item in inputs:
        if item.get("dataset"):
            via = str(item.get("via") or "dataset")
            said = VIA_IN_WORDS.get(via, via.replace("cache:", "cache "))
            ways.setdefault((str(item["dataset"]), str(item["version"])), []).append(said)
    return [(dataset, version, " and ".join(dict.fromkeys(how)))
            for (dataset, version), how in ways.items()]  # fmt: skip
