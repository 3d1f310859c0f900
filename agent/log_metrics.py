"""Charts from the train log: the algorithm's metric definitions, applied to every line.

The wrapper (``run_training.py --metric-extraction JSON``) follows the train log it writes and
hands what is new to a ``LogMetricsExtractor``, which declares the charts in ``metrics.json``
and appends each match as a point to ``<chart>.jsonl`` (docs: the environment contract), so an
unmodified script that prints ``loss=0.25`` gets a chart while it trains. The JSON is what
``octotrain.metric_definitions.MetricDefinition.extraction`` makes of each definition: the
regex, the chart's meta, the group holding x (None: x counts the chart's points, from 1) and
which group fills which key of a point.

A line is matched only once it is complete: ended by ``\\n`` or ``\\r`` (CRLF, and the ``\\r``
of progress bars that redraw one line), or the end of the log. ANSI colour codes are removed
first; only the first ``MAX_LINE_CHARS`` characters of a line are matched, so one huge line
costs no more than a long one. Following the file, rather than the training's pipe, means a
slow match can delay the charts but never the training.
"""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path
from typing import Any, BinaryIO

MAX_LINE_CHARS = 4096
READ_BYTES = 1 << 20
# CSI sequences (colours, cursor moves), OSC sequences (titles, links) and two-byte escapes.
ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


class _Chart:
    """One metric definition, compiled, with its count of points (x when the regex has none)."""

    def __init__(self, extraction: dict[str, Any]) -> None:
        self.meta: dict[str, Any] = extraction["meta"]
        self.name: str = self.meta["name"]
        self.x_key: str = self.meta["x"]
        self.pattern = re.compile(extraction["regex"])
        self.x_group: str | None = extraction["x_group"]
        self.lines: list[tuple[int | str, str]] = [
            (line["group"], line["key"]) for line in extraction["lines"]
        ]
        self.count = 0

    def point(self, text: str) -> dict[str, float] | None:
        match = self.pattern.search(text)
        if match is None:
            return None
        values = {key: _number(match.group(group)) for group, key in self.lines}
        point = {key: value for key, value in values.items() if value is not None}
        if not point:
            return None
        self.count += 1
        x = _number(match.group(self.x_group)) if self.x_group is not None else None
        return {self.x_key: self.count if x is None else x, **point}


class LogMetricsExtractor:
    """Turns the bytes of a train log, fed in any pieces, into the charts' points."""

    def __init__(self, folder: Path, extraction: list[dict[str, Any]], task_id: str) -> None:
        self.folder = folder
        self.charts = [_Chart(item) for item in extraction]
        self._partial = b""
        folder.mkdir(parents=True, exist_ok=True)
        document = {"id": task_id, "metas": [chart.meta for chart in self.charts]}
        partial = folder / ".metrics.json.partial"
        partial.write_text(json.dumps(document, ensure_ascii=False, indent=2), encoding="utf-8")
        partial.replace(folder / "metrics.json")

    def feed(self, data: bytes) -> None:
        """Match the lines ``data`` completes; keep its unfinished last line for later."""
        pending = (self._partial + data).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = pending.rfind(b"\n")
        # enough bytes for MAX_LINE_CHARS characters of any script (4 bytes at most in UTF-8)
        self._partial = pending[end + 1 :][: 4 * MAX_LINE_CHARS]
        if end >= 0:
            self._extract(pending[:end])

    def finish(self) -> None:
        """The log ended: its unfinished last line is complete after all."""
        last, self._partial = self._partial, b""
        self._extract(last)

    def _extract(self, block: bytes) -> None:
        """Match the complete lines of ``block``: decoded and rid of colours in one go (a
        block ends at a line's end, so no character is cut)."""
        text = block.decode("utf-8", "replace")
        if "\x1b" in text:
            text = ANSI_ESCAPE.sub("", text)
        found: dict[str, list[dict[str, float]]] = {}
        for line in text.split("\n"):
            if not line:
                continue
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS]
            for chart in self.charts:
                point = chart.point(line)
                if point is not None:
                    found.setdefault(chart.name, []).append(point)
        for name, points in found.items():
            lines_out = "".join(json.dumps(point, ensure_ascii=False) + "\n" for point in points)
            with (self.folder / f"{name}.jsonl").open("a", encoding="utf-8") as handle:
                handle.write(lines_out)


class LogMetricsFollower:
    """Follows a growing log file in a thread of its own, feeding an extractor, until
    ``stop`` (which extracts what is left, then the last line)."""

    def __init__(self, log: Path, extractor: LogMetricsExtractor, every_seconds: float) -> None:
        self.log = log
        self.extractor = extractor
        self.every_seconds = every_seconds
        self.error: OSError | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="log-metrics", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> OSError | None:
        """Extract the rest of the log; the error that stopped the extraction, if one did."""
        self._stopping.set()
        self._thread.join()
        return self.error

    def _follow(self) -> None:
        try:
            with self.log.open("rb") as handle:
                while not self._stopping.wait(self.every_seconds):
                    self._read(handle)
                self._read(handle)
                self.extractor.finish()
        except OSError as error:  # a full or read-only METRICS: the training goes on
            self.error = error

    def _read(self, handle: BinaryIO) -> None:
        while chunk := handle.read(READ_BYTES):
            self.extractor.feed(chunk)


def _number(text: str | None) -> float | None:
    """A captured value as a finite number (an integer stays one), or None."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return int(value) if value.is_integer() and text.lstrip("+-").isdigit() else value
