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
from dataclasses import dataclass, field

import numpy as np

from octotrain.metrics_meta import ChartMeta

TIMESTAMP = "timestamp"
DEFAULT_POINTS = 2000
# The last bytes parsed are kept: a file that no longer ends its parsed part with them was
# rewritten, not appended to (a node restarted), and is read again from its start.
TAIL_BYTES = 128
# Lines are parsed this many bytes at a time: the decoded objects of a whole 100 MB file at once
# would hold about a gigabyte.
PARSE_BYTES = 8 << 20


def _empty() -> np.ndarray:
    return _frozen(np.empty(0))


@dataclass
class ChartColumns:
    """What has been read of one chart's data file so far.

    The columns are read-only numpy arrays that a feed replaces and never changes in place, so a
    copy of this object (``dataclasses.replace``) is a consistent snapshot a request can use
    while another one feeds the original."""

    chart: ChartMeta
    x: np.ndarray = field(default_factory=_empty)
    lines: dict[str, np.ndarray] = field(default_factory=dict)
    timestamps: np.ndarray = field(default_factory=_empty)
    skipped: int = 0
    consumed: int = 0  # bytes of the file parsed (up to the last complete line)
    tail: bytes = b""  # the last TAIL_BYTES of them

    def __post_init__(self) -> None:
        self.lines = {name: self.lines.get(name, _empty()) for name in self.chart.lines}

    def feed(self, data: bytes) -> None:
        """Parse ``data``, the file's bytes from ``consumed`` on; a last line without its
        newline is left for the next call (it may be half-written)."""
        end = data.rfind(b"\n") + 1
        parts = [self._parse(data[start:stop]) for start, stop in _pieces(data, end)]
        self.consumed += end
        self.tail = (self.tail + data[max(0, end - TAIL_BYTES) : end])[-TAIL_BYTES:]
        if not parts:
            return
        self.skipped += sum(part[0] for part in parts)
        self.x = _joined(self.x, [part[1] for part in parts])
        self.lines = {
            name: _joined(values, [part[2][name] for part in parts])
            for name, values in self.lines.items()
        }
        self.timestamps = _joined(self.timestamps, [part[3] for part in parts])

    def _parse(self, complete: bytes) -> _Parsed:
        """The valid points of whole lines, column by column (a Python loop per point would
        cost seconds for a million of them), and how many lines were skipped."""
        rows = [row for row in complete.split(b"\n") if row.strip()]
        try:  # one parse of the whole batch, far faster than one per line
            decoded = json.loads(b"[" + b",".join(rows) + b"]") if rows else []
        except ValueError:
            decoded = None
        if not isinstance(decoded, list) or len(decoded) != len(rows):  # a bad or torn row
            decoded = [_loads(row) for row in rows]
        points = [point if type(point) is dict else {} for point in decoded]
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
        kept = {name: values[keep] for name, values in drawn.items()}
        return int(len(points) - keep.sum()), x[keep], kept, stamps[keep]

    @property
    def count(self) -> int:
        return len(self.x)


# skipped lines, x, each drawn line, timestamps
_Parsed = tuple[int, np.ndarray, dict[str, np.ndarray], np.ndarray]


def _pieces(data: bytes, end: int) -> list[tuple[int, int]]:
    """``data[:end]`` cut into whole lines of about PARSE_BYTES each."""
    pieces, start = [], 0
    while start < end:
        stop = data.find(b"\n", min(start + PARSE_BYTES, end) - 1) + 1
        pieces.append((start, stop))
        start = stop
    return pieces


def _joined(column: np.ndarray, parts: list[np.ndarray]) -> np.ndarray:
    """A new read-only column: ``column`` followed by ``parts`` (``column`` is left as it is,
    for whoever still reads it)."""
    return _frozen(np.concatenate([column, *parts]))


def _frozen(values: np.ndarray) -> np.ndarray:
    values.flags.writeable = False
    return values


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
