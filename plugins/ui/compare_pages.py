"""The console's comparison of runs (``/ui/compare?runs=12,15,17``): the runs and their
parameters side by side with the differing ones marked, a run to remove, or to add from any
task of the project, rendered here; the charts (one per
chart name, a line per run) and the trend of the tasks' retraining runs are drawn by
``compare.js`` from the REST API (``plugins/api/compare_routes.py``).

Runs that cannot be compared (an unknown id, runs of two projects, too many) are answered on
the page (400), naming the field, as the API does.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from hooks.storage.catalog import default_catalog
from octotrain.catalog.compared_runs import compared_runs, runs_to_add
from octotrain.catalog.views import RunView
from octotrain.errors import InvalidQuery
from octotrain.run_comparison import MAX_COMPARED_RUNS, parameter_table, parse_run_ids
from plugins.api.auth import CurrentScope
from plugins.ui.pages import render

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(get_user)])


@router.get("/compare", response_class=HTMLResponse)
def compare_page(
    request: Request,
    scope: CurrentScope,
    runs: Annotated[str, Query(max_length=200)] = "",
    add: Annotated[int | None, Query(ge=1)] = None,
) -> Response:
    """``add``: a run to add to ``runs`` (the page's "Add a run" form), answered by a redirect
    to the comparison with it, so that a comparison's address is always its runs."""
    if add is not None:
        ids = [part.strip() for part in runs.split(",") if part.strip()]
        query = urlencode({"runs": ",".join([*ids, str(add)])}, safe=",")
        return RedirectResponse(f"compare?{query}", status_code=303)
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
        ids = [view.id for _, _, view in shown]
        addable = runs_to_add(session, scope, project, ids) if len(ids) < MAX_COMPARED_RUNS else []
        offered = [
            (task.id, task.name, [RunView.of(run) for run in task_runs])
            for task, task_runs in addable
        ]
    return render(
        "compare.html",
        request,
        problems=[],
        runs=shown,
        ids=",".join(map(str, ids)),
        without={
            run_id: ",".join(str(other) for other in ids if other != run_id) for run_id in ids
        },
        addable=offered,
        tasks=tasks,
        project=project,
        parameters=parameters,
    )
