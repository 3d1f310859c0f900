"""A chart's columns as stored next to its metrics (``runs/<task>/<run key>/chart-index/<node>/
<chart>.index``), so that the first request for the chart reads numbers instead of parsing its
``<chart>.jsonl``: a million JSON lines take seconds to parse, their columns milliseconds to read.

The index is a cache, never the truth: it records how many bytes of the file it covers and the
last of them (``ChartColumns.tail``), and a reader uses it only while the file still holds those
bytes there, parsing just what was appended after them. An index of another x or other lines
(the meta file changed), of another format version, or cut short, is no index.

Format: a first line ``octotrain-chart-index <version>``, a JSON header line, then the columns
as little-endian doubles one after another: x, each drawn line in the header's order,
timestamps.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import numpy as np

from octotrain.metrics_meta import ChartMeta
from octotrain.metrics_series import TAIL_BYTES, ChartColumns

MAGIC = b"octotrain-chart-index 1\n"
DOUBLE = np.dtype("<f8")


def encoded(columns: ChartColumns) -> Iterator[bytes | memoryview]:
    """The index of ``columns``, in pieces to write one after another (a million points of a
    chart of four lines are 48 MB: not copied into one buffer)."""
    header = {
        "x": columns.chart.x,
        "lines": list(columns.chart.lines),
        "count": columns.count,
        "skipped": columns.skipped,
        "consumed": columns.consumed,
        "tail": base64.b64encode(columns.tail).decode("ascii"),
    }
    yield MAGIC + json.dumps(header).encode() + b"\n"
    for values in (columns.x, *columns.lines.values(), columns.timestamps):
        yield memoryview(np.ascontiguousarray(values, dtype=DOUBLE)).cast("B")


def decoded(data: bytes, chart: ChartMeta) -> ChartColumns | None:
    """The columns an index holds, or None when ``data`` is not an index of ``chart``."""
    if not data.startswith(MAGIC):
        return None
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        return None
    try:
        header = json.loads(data[len(MAGIC) : end])
        count, skipped, consumed = header["count"], header["skipped"], header["consumed"]
        tail = base64.b64decode(header["tail"], validate=True)
    except (ValueError, KeyError, TypeError):
        return None
    if header.get("x") != chart.x or header.get("lines") != list(chart.lines):
        return None
    if not all(type(number) is int and number >= 0 for number in (count, skipped, consumed)):
        return None
    names = ["x", *chart.lines, "timestamps"]
    body = memoryview(data)[end + 1 :]
    if len(body) != len(names) * count * DOUBLE.itemsize or len(tail) != min(consumed, TAIL_BYTES):
        return None
    # read-only views of ``data``, not copies
    values = np.frombuffer(body, dtype=DOUBLE).reshape(len(names), count)
    return ChartColumns(
        chart,
        x=values[0],
        lines=dict(zip(chart.lines, values[1:-1], strict=True)),
        timestamps=values[-1],
        skipped=skipped,
        consumed=consumed,
        tail=tail,
    )
