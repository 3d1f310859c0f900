"""A sweep as the REST API, the command line and the sweep page show it: its settings, state and
result, and its trials (their parameters, objective, state, duration and node-hours), built by
``hooks/sweeps/sweep_report.py`` from the catalog and the sweep's study."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict


class View(BaseModel):
    model_config = ConfigDict(frozen=True)


class TrialView(View):
    number: int
    run_id: int | None
    airflow_run_id: str
    # The trial's run's state ("queued", "running", "success", "failed", "stopped", "pruned").
    state: str
    # What it ran with: the values its sampler chose and the sweep's fixed ones.
    parameters: dict[str, Any]
    # Its objective: the finished trial's value, or the last one reported before it was
    # pruned or stopped; null before any.
    objective: float | None
    # Whether ``objective`` is the trial's result (a finished trial's), not a value on the way.
    complete: bool
    steps_reported: int
    message: str
    started_at: datetime | None
    ended_at: datetime | None
    duration_seconds: float | None
    node_hours: float


class SweepResult(View):
    trial: int
    run_id: int
    objective: float
    parameters: dict[str, Any]
    # The best trial's model version, marked as the sweep's result: repository and version.
    model_repository: str | None
    model_version: int | None


class SweepSummary(View):
    id: int
    task_id: int
    task_name: str
    name: str
    description: str
    state: str
    message: str
    created_by: str
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    airflow_run_id: str
    spec: dict[str, Any]
    counts: dict[str, int]
    node_hours: float
    best: SweepResult | None


class SweepView(SweepSummary):
    trials: list[TrialView]


class TrialCurve(View):
    """The objective values a trial reported, as its pruner saw them."""

    number: int
    state: str
    steps: list[int]
    values: list[float]


class SweepCurves(View):
    direction: str
    trials: list[TrialCurve]
