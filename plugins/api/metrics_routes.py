"""A run's training metrics and resource usage over REST, for the charts.

Metrics: the judged meta file of a node (its valid charts and the exact problems of the rest),
one chart's points cut to about ``points`` per line by a peak-preserving downsampling (or only
the points after ``after``, for a live chart's refresh), and the raw points as CSV. Resources:
one node's samples (CPU, memory, each GPU), which collector packages its image lacks, and
how many GPUs a node of the run was given (so that a node without GPUs is not told it cannot
measure them).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from typing import Annotated, NamedTuple
from urllib.parse import quote

import numpy as np
from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from hooks.launchers import metrics_of
from hooks.runs.run_metrics import RunMetrics
from hooks.storage.catalog import default_catalog
from octotrain.errors import FieldProblem
from octotrain.metrics_series import DEFAULT_POINTS, ChartColumns, peak_preserving_indices
from octotrain.planning import RunPlan, recorded_plan
from octotrain.run_lifecycle import ACTIVE_RUN_STATES
from octotrain.tasks import Tasks
from plugins.api.auth import CurrentScope
from plugins.api.task_routes import RunId, TaskId

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(tags=["metrics"], dependencies=[Depends(get_user)])
ChartName = Annotated[str, Path(min_length=1, max_length=64)]
Node = Annotated[str | None, Query(min_length=1, max_length=64, description="default: the first")]
Points = Annotated[int, Query(ge=10, le=20_000)]
CSV_ROWS = 10_000


class ProblemView(BaseModel):
    field: str
    rule: str


class ChartView(BaseModel):
    name: str
    x: str
    ys: list[str]
    series: list[str]
    description: str
    smooth: bool
    with_timestamp: bool


class MetricsView(BaseModel):
    """The node's charts; ``problems`` says what is wrong with the meta file (charts that
    break a rule are not in ``charts``); ``declared`` is false while there is no meta file."""

    node: str
    nodes: list[str]
    live: bool
    declared: bool
    charts: list[ChartView]
    problems: list[ProblemView]


class SeriesView(BaseModel):
    """Points of one chart: ``x``, each drawn line (``null``: a gap), ``timestamps`` when
    written. ``total`` points exist; ``downsampled`` when fewer are returned. Refresh with
    ``after=last`` for what was appended since."""

    name: str
    total: int
    downsampled: bool
    skipped: int
    x: list[float]
    lines: dict[str, list[float | None]]
    timestamps: list[float | None] | None
    last: int


class ResourcesView(BaseModel):
    """One node's samples; ``live`` while the run may still add some; ``gpu_count``: the GPUs
    of each node by the run's resource spec, ``None`` for a run that ended before its plan."""

    node: str
    nodes: list[str]
    live: bool
    gpu_count: int | None
    missing: list[str]
    skipped: int
    timestamps: list[float | None]
    columns: dict[str, list[float | None]]


class _RunCharts(NamedTuple):
    metrics: RunMetrics
    live: bool
    gpu_count: int | None


def _metrics(task_id: int, run_id: int, scope: CurrentScope) -> _RunCharts:
    with default_catalog().session() as session:
        run = Tasks(session, scope).run(task_id, run_id)
        active = run.state in ACTIVE_RUN_STATES
        return _RunCharts(metrics_of(run), active, _gpu_count(recorded_plan(run)))


def _gpu_count(plan: RunPlan | None) -> int | None:
    """The GPUs per node of the run's plan (its resource spec when it started: a spec edited
    since does not change what the run had); ``None`` when validate never planned the run."""
    return plan.resources.gpu_count if plan is not None and plan.resources else None


def _node(metrics: RunMetrics, node: str | None) -> str:
    chosen = node or (metrics.nodes[0] if metrics.nodes else "single-0")
    metrics.check_node(chosen)
    return chosen


@router.get("/tasks/{task_id}/runs/{run_id}/metrics", summary="The charts a node declared")
def list_charts(
    task_id: TaskId, run_id: RunId, scope: CurrentScope, node: Node = None
) -> MetricsView:
    metrics, live, _ = _metrics(task_id, run_id, scope)
    chosen = _node(metrics, node)
    meta = metrics.meta(chosen)
    return MetricsView(
        node=chosen,
        nodes=metrics.nodes,
        live=live,
        declared=meta is not None,
        charts=[ChartView(**vars(chart)) for chart in meta.charts] if meta else [],
        problems=[_problem(problem) for problem in meta.problems] if meta else [],
    )


@router.get(
    "/tasks/{task_id}/runs/{run_id}/metrics/{name}",
    summary="One chart's points, downsampled to about `points` per line (peaks kept)",
)
def chart_points(
    task_id: TaskId,
    run_id: RunId,
    name: ChartName,
    scope: CurrentScope,
    node: Node = None,
    points: Points = DEFAULT_POINTS,
    after: Annotated[int, Query(ge=0, description="only points after the first `after`")] = 0,
) -> SeriesView:
    metrics, _, _ = _metrics(task_id, run_id, scope)
    columns = metrics.chart(_node(metrics, node), name)
    chart = columns.chart
    total = columns.count
    lines = {line: values[after:] for line, values in columns.lines.items()}
    kept = peak_preserving_indices(list(lines.values()), points)
    return SeriesView(
        name=chart.name,
        total=total,
        downsampled=len(kept) < total - after,
        skipped=columns.skipped,
        x=columns.x[after:][kept].tolist(),
        lines={line: _gaps(values[kept]) for line, values in lines.items()},
        timestamps=_gaps(columns.timestamps[after:][kept]) if chart.with_timestamp else None,
        last=total,
    )


@router.get(
    "/tasks/{task_id}/runs/{run_id}/metrics/{name}/csv",
    summary="One chart's raw points as CSV (never downsampled)",
    response_class=StreamingResponse,
)
def chart_csv(
    task_id: TaskId, run_id: RunId, name: ChartName, scope: CurrentScope, node: Node = None
) -> StreamingResponse:
    metrics, _, _ = _metrics(task_id, run_id, scope)
    chosen = _node(metrics, node)
    columns = metrics.chart(chosen, name)
    filename = f"task-{task_id}-run-{run_id}-{chosen}-{name}.csv"
    return StreamingResponse(
        _csv_rows(columns),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f"attachment; filename*=UTF-8''{quote(filename, safe='')}"},
    )


@router.get("/tasks/{task_id}/runs/{run_id}/resources", summary="A node's resource usage")
def resources(
    task_id: TaskId, run_id: RunId, scope: CurrentScope, node: Node = None,
    points: Points = DEFAULT_POINTS,
) -> ResourcesView:  # fmt: skip
    metrics, live, gpu_count = _metrics(task_id, run_id, scope)
    chosen = _node(metrics, node)
    samples = metrics.resources(chosen)
    columns = {name: np.array(values) for name, values in samples.columns.items()}
    kept = peak_preserving_indices(list(columns.values()), points) if columns else np.arange(0)
    return ResourcesView(
        node=chosen,
        nodes=metrics.nodes,
        live=live,
        gpu_count=gpu_count,
        missing=samples.missing,
        skipped=samples.skipped,
        timestamps=_gaps(np.array(samples.timestamps)[kept]) if columns else [],
        columns={name: _gaps(values[kept]) for name, values in columns.items()},
    )


def _problem(problem: FieldProblem) -> ProblemView:
    return ProblemView(field=problem.field, rule=problem.rule)


def _gaps(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(value) else value for value in values.tolist()]


def _csv_rows(columns: ChartColumns) -> Iterator[str]:
    chart = columns.chart
    header = [chart.x, *chart.lines] + (["timestamp"] if chart.with_timestamp else [])
    data = [columns.x, *columns.lines.values()] + (
        [columns.timestamps] if chart.with_timestamp else []
    )
    for start in range(0, columns.count + 1, CSV_ROWS):
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        if start == 0:
            writer.writerow(header)
        rows = zip(*(column[start : start + CSV_ROWS].tolist() for column in data), strict=True)
        writer.writerows([_text(value) for value in row] for row in rows)
        yield buffer.getvalue()


def _text(value: float) -> str:
    """A number as it was written: ``4321`` for a whole number, the shortest repr otherwise,
    nothing for a gap."""
    if math.isnan(value):
        return ""
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
