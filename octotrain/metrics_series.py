"""The points of one chart (``<name>.jsonl``) as columns of numbers, read incrementally while the
file grows, and cut down to what a chart can show without losing its peaks.

A line that is torn (a writer caught mid-append), not an object, or whose x or drawn values
are not finite numbers is skipped and counted; a missing drawn value is a gap (NaN) in that
line only. Reading goes on from where it stopped, so a live chart parses only new points.
"""

from __future__ import annotations

import json
import math
import sys
from array import array
from dataclasses import dataclass, field

import numpy as np

from octotrain.metrics_meta import ChartMeta

TIMESTAMP = "timestamp"
DEFAULT_POINTS = 2000


@dataclass
class ChartColumns:
    """What has been read of one chart's data file so far."""

    chart: ChartMeta
    # Packed doubles (8 bytes a value, read by numpy without a copy): a million points of a
    # chart stay a few dozen megabytes in the api-server.
    x: array[float] = field(default_factory=lambda: array("d"))
    lines: dict[str, array[float]] = field(default_factory=dict)
    timestamps: array[float] = field(default_factory=lambda: array("d"))
    skipped: int = 0
    consumed: int = 0  # bytes of the file parsed (up to the last complete line)

    def __post_init__(self) -> None:
        self.lines = {name: array("d") for name in self.chart.lines}

    def column(self, values: array[float]) -> np.ndarray:
        return np.frombuffer(values, dtype=np.float64) if len(values) else np.empty(0)

    def feed(self, data: bytes) -> None:
        """Parse ``data``, the file's bytes from ``consumed`` on; a last line without its
        newline is left for the next call (it may be half-written)."""
        end = data.rfind(b"\n") + 1
        complete = data[:end]
        self.consumed += end
        rows = [row for row in complete.split(b"\n") if row.strip()]
        if not rows:
            return
        try:  # one parse of the whole batch, far faster than one per line
            points = json.loads(b"[" + b",".join(rows) + b"]")
        except ValueError:
            points = None
        if not isinstance(points, list) or len(points) != len(rows):  # a bad or torn row
            points = [_loads(row) for row in rows]
        self._add_all([point if type(point) is dict else {} for point in points])

    def _add_all(self, points: list[dict[str, object]]) -> None:
        """Add the valid points, column by column (a Python loop per point would cost seconds
        for a million of them)."""
        x, _ = _floats([point.get(self.chart.x) for point in points])
        keep = np.isfinite(x)
        drawn, any_given = {}, np.zeros(len(points), dtype=bool)
        for name in self.chart.lines:
            values, given = _floats([point.get(name) for point in points])
            keep &= ~(given & ~np.isfinite(values))  # a value that is there must be a number
            any_given |= given
            drawn[name] = values
        keep &= any_given
        stamps, _ = _floats([point.get(TIMESTAMP) for point in points])
        self.skipped += int(len(points) - keep.sum())
        self.x.frombytes(x[keep].tobytes())
        for name, values in drawn.items():
            self.lines[name].frombytes(values[keep].tobytes())
        self.timestamps.frombytes(stamps[keep].tobytes())

    @property
    def count(self) -> int:
        return len(self.x)


def _loads(row: bytes) -> object:
    try:
        return json.loads(row)
    except ValueError:
        return None


def _floats(values: list[object]) -> tuple[np.ndarray, np.ndarray]:
    """``values`` as floats (NaN for anything but a number: bools, strings, missing), and
    which of them were given at all."""
    given = np.fromiter((value is not None for value in values), dtype=bool, count=len(values))
    numbers = np.fromiter(
        (  # inline, not a call per value: this runs millions of times
            v
            if type(v) is float
            else float(v)
            if type(v) is int and -_LARGEST < v < _LARGEST  # type: ignore[operator]
            else math.nan
            for v in values
        ),
        dtype=np.float64,
        count=len(values),
    )
    return numbers, given


_LARGEST = int(sys.float_info.max)  # an integer beyond a double is refused like infinity


def peak_preserving_indices(lines: list[np.ndarray], points: int = DEFAULT_POINTS) -> np.ndarray:
    """Indices of at most about ``points`` per line that keep each line's shape: the first and
    last point, and in each of ``points / 2`` equal buckets the minimum and maximum of every
    line (so the global minimum and maximum always survive)."""
    count = len(lines[0]) if lines else 0
    if count <= points:
        return np.arange(count)
    buckets = max(1, points // 2)
    size = math.ceil(count / buckets)
    padded = buckets * size
    chosen = [np.array([0, count - 1])]
    offsets = np.arange(buckets) * size
    for values in lines:
        grid = np.full(padded, np.nan)
        grid[:count] = values
        grid = grid.reshape(buckets, size)
        empty = np.isnan(grid).all(axis=1)
        grid[empty, 0] = 0.0  # nanargmin needs one number per bucket; these are dropped below
        low = offsets + np.nanargmin(grid, axis=1)
        high = offsets + np.nanargmax(grid, axis=1)
        chosen += [low[~empty], high[~empty]]
    indices = np.unique(np.concatenate(chosen))
    return indices[indices < count]
