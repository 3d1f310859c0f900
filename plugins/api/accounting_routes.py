"""Usage accounting over REST (``octotrain.catalog.accounting``): a project's node-, CPU- and
GPU-hours, queued and training time in one month, per task; a task's per run; one run's.

``month`` is ``YYYY-MM`` in UTC (the current month by default for a project; all time by
default for a task); anything else is refused (400) naming the field. A project's tasks and a
task's runs are paged as every list is (``?limit=&offset=``, ``total_entries``); ``total`` is
always the sum over the whole list.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Query

from hooks.storage.catalog import default_catalog
from octotrain.catalog.accounting import (
    Accounting,
    Month,
    ProjectMonthUsage,
    RunUsage,
    TaskRunsUsage,
)
from plugins.api.auth import CurrentScope
from plugins.api.catalog_routes import ProjectName
from plugins.api.paging import CurrentWindow
from plugins.api.task_routes import RunId, TaskId

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(tags=["usage"], dependencies=[Depends(get_user)])
MonthText = Annotated[
    str | None, Query(max_length=16, description="YYYY-MM, UTC", examples=["2026-11"])
]


@router.get(
    "/projects/{project}/usage",
    summary="A project's usage in one month (the current one by default), per task",
)
def project_usage(
    project: ProjectName, scope: CurrentScope, window: CurrentWindow, month: MonthText = None
) -> ProjectMonthUsage:
    chosen = Month.parse(month) if month is not None else Month.of(datetime.now(UTC))
    with default_catalog().session() as session:
        return Accounting(session, scope).project_month(project, chosen, window)


@router.get(
    "/tasks/{task_id}/usage",
    summary="A task's usage per run, in one month or (by default) all time",
)
def task_usage(
    task_id: TaskId, scope: CurrentScope, window: CurrentWindow, month: MonthText = None
) -> TaskRunsUsage:
    chosen = Month.parse(month) if month is not None else None
    with default_catalog().session() as session:
        return Accounting(session, scope).task(task_id, chosen, window)


@router.get("/tasks/{task_id}/runs/{run_id}/usage", summary="One run's usage, all time")
def run_usage(task_id: TaskId, run_id: RunId, scope: CurrentScope) -> RunUsage:
    with default_catalog().session() as session:
        return Accounting(session, scope).run_of(task_id, run_id)
