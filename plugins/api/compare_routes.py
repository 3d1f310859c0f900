"""Comparing runs over REST (``octotrain.run_comparison``): the runs side by side (the charts
they declare, their final values, their parameters with the differing ones named), one chart of
every run on a shared x, and a task's retraining runs as a trend of their final values.

Metrics are read from each run's first node, the one whose charts the Metrics tab opens on.
``runs`` is a comma-separated list of 2 to 8 run ids of one project; anything else is refused
(400) naming the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel

from hooks.launchers import metrics_of
from hooks.runs.run_metrics import RunMetrics, chart_finals, first_node, node_charts
from hooks.storage.catalog import default_catalog
from octotrain.catalog.compared_runs import ComparedRun, compared_runs, retraining_runs
from octotrain.catalog.models import Run, as_utc
from octotrain.errors import NotFound
from octotrain.metrics_meta import ChartMeta
from octotrain.metrics_series import DEFAULT_POINTS, peak_preserving_indices
from octotrain.planning import recorded_plan
from octotrain.run_comparison import (
    FinalValue,
    RunFinals,
    RunPoints,
    align_by_x,
    parameter_table,
    parse_run_ids,
    trend,
)
from plugins.api.auth import CurrentScope
from plugins.api.metrics_routes import ChartName, Points
from plugins.api.task_routes import TaskId

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(tags=["compare"], dependencies=[Depends(get_user)])
RunIds = Annotated[
    str, Query(min_length=1, max_length=200, description="2 to 8 run ids, e.g. 12,15,17")
]
TREND_RUNS = 50
TrendLimit = Annotated[int, Query(ge=1, le=200, description="the task's latest this many runs")]


class ComparedRunView(BaseModel):
    id: int
    task_id: int
    task: str
    label: str
    state: str
    trigger: str
    started_at: datetime
    ended_at: datetime | None
    model_version: int | None


class ComparedChartView(BaseModel):
    """A chart some of the runs declare (as the first of them declares it), and which."""

    name: str
    description: str
    x: str
    lines: list[str]
    runs: list[str]


class FinalView(BaseModel):
    x: float
    value: float


class ParameterView(BaseModel):
    """A parameter's value in each run, in the order of ``runs`` (JSON text; ``null``: the run
    had no such parameter)."""

    name: str
    values: list[str | None]
    differs: bool


class ComparisonView(BaseModel):
    """The runs side by side; ``finals``: run label → chart → line → its last value."""

    project: str
    runs: list[ComparedRunView]
    charts: list[ComparedChartView]
    finals: dict[str, dict[str, dict[str, FinalView]]]
    parameters: list[ParameterView]
    differing: list[str]


class ComparedPointsView(BaseModel):
    """One chart of every run that declares it, on the union of their x values: ``values`` is
    run label → line → the value at each x (``null``: that run has no point there).
    ``missing`` names the runs that do not declare the chart; ``downsampled`` when a run had
    more than about ``points`` points per line."""

    name: str
    x_name: str
    lines: list[str]
    x: list[float]
    values: dict[str, dict[str, list[float | None]]]
    missing: list[str]
    downsampled: bool


class TrendPointView(BaseModel):
    run_id: int
    started_at: datetime
    value: float


class TrendRunView(BaseModel):
    id: int
    state: str
    trigger: str
    started_at: datetime


class TrendView(BaseModel):
    """The task's latest retraining runs (started by its schedule or a new dataset version),
    oldest first, and each chart line's final value in them: chart → line → points."""

    task_id: int
    runs: list[TrendRunView]
    charts: dict[str, dict[str, list[TrendPointView]]]


@router.get("/compare", summary="Runs of one project side by side: charts, finals, parameters")
def compare(runs: RunIds, scope: CurrentScope) -> ComparisonView:
    ids = parse_run_ids(runs)
    with default_catalog().session() as session:
        chosen = compared_runs(session, scope, ids)
        project = chosen[0].task.project.name
        shown = [_run_view(item) for item in chosen]
        metrics = [(item.label, *_first_node(item.run)) for item in chosen]
        plans = [recorded_plan(item.run) for item in chosen]
        parameters = [dict(plan.parameters) if plan else {} for plan in plans]
    charts: dict[str, ComparedChartView] = {}
    finals: dict[str, dict[str, dict[str, FinalView]]] = {}
    for label, reader, node in metrics:
        finals[label] = {}
        for chart in node_charts(reader, node):
            listed = charts.setdefault(chart.name, _chart_view(chart))
            listed.runs.append(label)
            finals[label][chart.name] = {
                line: FinalView(x=final.x, value=final.value)
                for line, final in chart_finals(reader, node, chart).items()
            }
    rows = parameter_table(parameters)
    return ComparisonView(
        project=project,
        runs=shown,
        charts=list(charts.values()),
        finals=finals,
        parameters=[ParameterView(name=r.name, values=r.values, differs=r.differs) for r in rows],
        differing=[row.name for row in rows if row.differs],
    )


@router.get(
    "/compare/charts/{name}",
    summary="One chart of several runs on a shared x, downsampled to about `points` per run",
)
def compare_chart(
    name: ChartName, runs: RunIds, scope: CurrentScope, points: Points = DEFAULT_POINTS
) -> ComparedPointsView:
    ids = parse_run_ids(runs)
    with default_catalog().session() as session:
        metrics = [
            (item.label, *_first_node(item.run)) for item in compared_runs(session, scope, ids)
        ]
    found: list[tuple[str, ChartMeta, RunPoints, bool]] = []
    missing = []
    for label, reader, node in metrics:
        chart = next((chart for chart in node_charts(reader, node) if chart.name == name), None)
        if chart is None:
            missing.append(label)
            continue
        run_points, cut = _points(reader, node, chart, label, points)
        found.append((label, chart, run_points, cut))
    if not found:
        raise NotFound(f"none of runs {runs} declares a valid chart {name!r}")
    first = found[0][1]
    aligned = align_by_x([run_points for _, _, run_points, _ in found])
    return ComparedPointsView(
        name=name,
        x_name=first.x,
        lines=list(dict.fromkeys(line for _, chart, _, _ in found for line in chart.lines)),
        x=aligned.x,
        values=aligned.values,
        missing=missing,
        downsampled=any(cut for *_, cut in found),
    )


@router.get(
    "/tasks/{task_id}/trend",
    summary="A task's retraining runs: each chart line's final value, run after run",
)
def task_trend(
    task_id: TaskId,
    scope: CurrentScope,
    limit: TrendLimit = TREND_RUNS,
) -> TrendView:
    with default_catalog().session() as session:
        runs = retraining_runs(session, scope, task_id, limit)
        listed = [_trend_run_view(run) for run in runs]
        readers = [(run.id, as_utc(run.started_at), *_first_node(run)) for run in runs]
    finals = [
        RunFinals(run_id=run_id, started_at=started_at, finals=_all_finals(reader, node))
        for run_id, started_at, reader, node in readers
    ]
    charts = {
        chart: {
            line: [TrendPointView(**vars(point)) for point in points]
            for line, points in by_line.items()
        }
        for chart, by_line in trend(finals).items()
    }
    return TrendView(task_id=task_id, runs=listed, charts=charts)


def _trend_run_view(run: Run) -> TrendRunView:
    return TrendRunView(
        id=run.id, state=str(run.state), trigger=run.trigger, started_at=as_utc(run.started_at)
    )


def _all_finals(reader: RunMetrics, node: str) -> dict[str, dict[str, FinalValue]]:
    return {chart.name: chart_finals(reader, node, chart) for chart in node_charts(reader, node)}


def _run_view(item: ComparedRun) -> ComparedRunView:
    run = item.run
    return ComparedRunView(
        id=run.id,
        task_id=item.task.id,
        task=item.task.name,
        label=item.label,
        state=str(run.state),
        trigger=run.trigger,
        started_at=as_utc(run.started_at),
        ended_at=as_utc(run.ended_at) if run.ended_at else None,
        model_version=run.model_version.version if run.model_version else None,
    )


def _first_node(run: Run) -> tuple[RunMetrics, str]:
    reader = metrics_of(run)
    return reader, first_node(reader)


def _chart_view(chart: ChartMeta) -> ComparedChartView:
    return ComparedChartView(
        name=chart.name, description=chart.description, x=chart.x, lines=chart.lines, runs=[]
    )


def _points(
    reader: RunMetrics, node: str, chart: ChartMeta, label: str, points: int
) -> tuple[RunPoints, bool]:
    """The run's points of ``chart``, cut to about ``points`` per line with peaks kept, and
    whether any were left out."""
    columns = reader.columns(node, chart)
    lines = dict(columns.lines)
    kept = peak_preserving_indices(list(lines.values()), points)
    return (
        RunPoints(
            label=label,
            x=columns.x[kept],
            lines={line: values[kept] for line, values in lines.items()},
        ),
        len(kept) < columns.count,
    )
