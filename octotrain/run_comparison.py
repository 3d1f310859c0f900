"""Comparing runs: one chart's lines of several runs on one x axis, each run's final values,
the parameters that differ between them, and a task's retraining runs as a trend of their final
values over time.

Everything here works on what was already read (points as numpy columns, parameters as the
plans recorded them), so that the rules are tested without a store or a catalog.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from octotrain.errors import InvalidQuery

MIN_COMPARED_RUNS = 2
MAX_COMPARED_RUNS = 8
RUNS_FIELD = "runs"


def parse_run_ids(text: str) -> list[int]:
    """The run ids of a ``runs`` query (``12,15,17``), in the order given; refused naming the
    field when one is not a run id, is given twice, or there are too few or too many."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    ids: list[int] = []
    for part in parts:
        if not part.isascii() or not part.isdigit() or int(part) < 1:
            raise InvalidQuery.one(RUNS_FIELD, f"{part!r} is not a run id (a whole number from 1)")
        if int(part) in ids:
            raise InvalidQuery.one(RUNS_FIELD, f"run {int(part)} is given twice")
        ids.append(int(part))
    if not MIN_COMPARED_RUNS <= len(ids) <= MAX_COMPARED_RUNS:
        raise InvalidQuery.one(
            RUNS_FIELD,
            f"compare {MIN_COMPARED_RUNS} to {MAX_COMPARED_RUNS} runs, separated by commas; "
            f"{len(ids)} given",
        )
    return ids


@dataclass(frozen=True)
class RunPoints:
    """One run's points of one chart: ``x`` and each drawn line, columns of equal length (NaN:
    a gap in that line)."""

    label: str
    x: np.ndarray
    lines: Mapping[str, np.ndarray]


@dataclass(frozen=True)
class AlignedChart:
    """Every x any run has, ascending, and each run's value of each line at each of them
    (``None`` where the run has no point there): one row of a shared tooltip or table per x."""

    x: list[float]
    values: dict[str, dict[str, list[float | None]]]  # run label → line → values


def align_by_x(runs: Sequence[RunPoints]) -> AlignedChart:
    """The runs' points on the union of their x values. A run that wrote the same x twice (a
    training resumed from an earlier checkpoint writes its steps again) keeps its last value."""
    grid = np.unique(np.concatenate([run.x for run in runs])) if runs else np.empty(0)
    values: dict[str, dict[str, list[float | None]]] = {}
    for run in runs:
        # the last of repeated x: unique over the reversed column gives each x's last position
        reversed_x = run.x[::-1]
        unique_x, first_in_reversed = np.unique(reversed_x, return_index=True)
        last = len(run.x) - 1 - first_in_reversed
        where = np.searchsorted(grid, unique_x)
        values[run.label] = {}
        for name, column in run.lines.items():
            row = np.full(len(grid), np.nan)
            row[where] = column[last]
            values[run.label][name] = _gaps(row)
    return AlignedChart(x=grid.tolist(), values=values)


@dataclass(frozen=True)
class FinalValue:
    """A line's last number and the x it was written at."""

    x: float
    value: float


def final_values(x: np.ndarray, lines: Mapping[str, np.ndarray]) -> dict[str, FinalValue]:
    """The last finite value of each line (a line that is all gaps has none)."""
    finals = {}
    for name, column in lines.items():
        finite = np.flatnonzero(np.isfinite(column))
        if len(finite):
            at = finite[-1]
            finals[name] = FinalValue(x=float(x[at]), value=float(column[at]))
    return finals


@dataclass(frozen=True)
class ParameterRow:
    """One parameter across the runs: its value in each (as JSON text, exactly what the
    training received; ``None`` where the run had no such parameter) and whether they differ."""

    name: str
    values: list[str | None]
    differs: bool


def parameter_table(parameters: Sequence[Mapping[str, object]]) -> list[ParameterRow]:
    """Every parameter any run had, by name. ``1`` and ``1.0`` differ: the training is given
    ``--lr=1`` or ``--lr=1.0``, which a script may well read differently."""
    names = sorted({name for run in parameters for name in run})
    rows = []
    for name in names:
        values = [_json(run[name]) if name in run else None for run in parameters]
        rows.append(ParameterRow(name=name, values=values, differs=len(set(values)) > 1))
    return rows


@dataclass(frozen=True)
class RunFinals:
    """What a trend is drawn from: one run, when it started, and its final values by chart and
    line."""

    run_id: int
    started_at: datetime
    finals: Mapping[str, Mapping[str, FinalValue]]


@dataclass(frozen=True)
class TrendPoint:
    run_id: int
    started_at: datetime
    value: float


def trend(runs: Sequence[RunFinals]) -> dict[str, dict[str, list[TrendPoint]]]:
    """Each chart line's final value run after run, oldest first; a run that wrote nothing of a
    line is simply not a point of it."""
    lines: dict[str, dict[str, list[TrendPoint]]] = {}
    for run in sorted(runs, key=lambda item: (item.started_at, item.run_id)):
        for chart, finals in run.finals.items():
            for line, final in finals.items():
                point = TrendPoint(run_id=run.run_id, started_at=run.started_at, value=final.value)
                lines.setdefault(chart, {}).setdefault(line, []).append(point)
    return lines


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _gaps(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(value) else value for value in values.tolist()]
