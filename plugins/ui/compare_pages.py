"""The console's comparison of runs (``/ui/compare?runs=12,15,17``): the runs and their
parameters side by side with the differing ones marked, rendered here; the charts (one per
chart name, a line per run) and the trend of the tasks' retraining runs are drawn by
``compare.js`` from the REST API (``plugins/api/compare_routes.py``).

Runs that cannot be compared (an unknown id, runs of two projects, too many) are answered on
the page (400), naming the field, as the API does.
"""

from __future__ import annotations

from typing import Annotated

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from hooks.catalog import default_catalog
from octotrain.catalog.compared_runs import compared_runs
from octotrain.catalog.views import RunView
from octotrain.errors import InvalidQuery
from octotrain.run_comparison import parameter_table, parse_run_ids
from plugins.api.auth import CurrentScope
from plugins.ui.pages import render

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(get_user)])


@router.get("/compare", response_class=HTMLResponse)
def compare_page(
    request: Request, scope: CurrentScope, runs: Annotated[str, Query(max_length=200)] = ""
) -> HTMLResponse:
    with default_catalog().session() as session:
        try:
            chosen = compared_runs(session, scope, parse_run_ids(runs))
        except InvalidQuery as error:
            return render(
                "compare.html", request, status_code=400, problems=error.problems, runs=[]
            )
        shown = [(item.label, item.task, RunView.of(item.run)) for item in chosen]
        tasks = {item.task.id: item.task.name for item in chosen}
        project = chosen[0].task.project.name
        parameters = parameter_table([view.parameters for _, _, view in shown])
    return render(
        "compare.html",
        request,
        problems=[],
        runs=shown,
        ids=",".join(str(view.id) for _, _, view in shown),
        tasks=tasks,
        project=project,
        parameters=parameters,
    )
