"""The console's Usage section: a project's usage in one month (``octotrain.catalog.accounting``),
its totals and a row per task, as a platform team bills and plans with.

A plain GET form (project, month), rendered on the server: nothing on the page is built from
script. A bad month or a project the user cannot see is answered on the page itself (400, 404),
naming the field, with the form to correct it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from hooks.storage.catalog import default_catalog
from octotrain.catalog.accounting import Accounting, Month, ProjectMonthUsage
from octotrain.catalog.paging import MAX_LIMIT, Window
from octotrain.catalog.projects import Projects
from octotrain.errors import InvalidQuery, NotFound
from plugins.api.auth import CurrentScope
from plugins.ui.pages import render

FormText = Annotated[str | None, Query(max_length=64)]
# The tasks that used most; the page says how many there are in all, the REST API pages them.
SHOWN_TASKS = Window(limit=MAX_LIMIT)

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(get_user)])


@router.get("/usage", response_class=HTMLResponse)
def usage_page(
    request: Request, scope: CurrentScope, project: FormText = None, month: FormText = None
) -> HTMLResponse:
    """Project ``project``'s usage in ``month`` (the user's first project and the current UTC
    month by default)."""
    current = Month.of(datetime.now(UTC))
    with default_catalog().session() as session:
        projects = [row.name for row in Projects(session, scope).list()]
        chosen = project or (projects[0] if projects else None)
        page: dict[str, object] = {"projects": projects, "project": chosen, "month": month,
                                   "report": None, "problems": [], "missing": ""}  # fmt: skip
        if chosen is None:
            return render("usage.html", request, **page)
        try:
            parsed = Month.parse(month) if month else current
            report = Accounting(session, scope).project_month(chosen, parsed, SHOWN_TASKS)
        except InvalidQuery as error:
            return render(
                "usage.html", request, status_code=400, **page | {"problems": error.problems}
            )
        except NotFound as error:
            return render("usage.html", request, status_code=404, **page | {"missing": str(error)})
    return render(
        "usage.html",
        request,
        **page | {"report": report, "month": report.month},
        earlier=_shifted(parsed, -1) if parsed != Month(1970, 1) else None,
        later=_shifted(parsed, 1) if parsed != current else None,
        units=_units(report),
    )


def _shifted(month: Month, by: int) -> str:
    index = month.year * 12 + month.month - 1 + by
    return str(Month(index // 12, index % 12 + 1))


def _units(report: ProjectMonthUsage) -> list[tuple[str, str, float]]:
    """The totals as the page's summary shows them: (key, label, hours)."""
    total = report.total
    return [
        ("node_hours", "Node-hours", total.node_hours),
        ("cpu_hours", "CPU-hours", total.cpu_hours),
        ("gpu_hours", "GPU-hours", total.gpu_hours),
        ("queued_hours", "Queued (h)", total.queued_hours),
        ("training_hours", "Training (h)", total.training_hours),
    ]
