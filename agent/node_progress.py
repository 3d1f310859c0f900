"""The node's phase and its training's progress, recorded beside the training by its wrapper.

The wrapper writes the phase file (``training`` when the command starts, ``uploading`` when it
ends; JSON ``{"phase", "since", "updated"}``, written whole then renamed) and, while the
training runs, samples its progress every ``every`` seconds into a JSON-lines file, one
``{"time", "current", "total"}`` each time it changed (``octotrain/node_progress.py`` reads
both and estimates when the node will be done). The progress is, in this order:

- ``$METRICS/progress.json``, ``{"current": 120, "total": 1000}``, which the algorithm may
  rewrite as often as it likes (``total`` optional; numbers, ``current`` at least 0);
- else the last x of the first chart in ``$METRICS/metrics.json`` whose meta declares a
  ``total`` (the x value at which the training ends), read from the end of its ``.jsonl``.

Imports nothing of Octotrain: it runs in images that do not have it.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

PROGRESS_FILE = "progress.json"
META_FILE = "metrics.json"
# How much of a chart's end is read for its last point.
TAIL_BYTES = 64 * 1024


def write_phase(path: Path, phase: str, *, since: float | None = None) -> None:
    """Record the node's phase (whole, then renamed: a reader sees the old or the new)."""
    now = time.time()
    record = {"phase": phase, "since": now if since is None else since, "updated": now}
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(record), encoding="utf-8")
    partial.replace(path)


def read_progress(metrics: Path) -> tuple[float, float | None] | None:
    """(current, total) of the training now, from ``progress.json`` or the declared chart;
    None when neither says (absent, torn while rewritten, not numbers)."""
    declared = _progress_file(metrics / PROGRESS_FILE)
    return declared if declared is not None else _chart_progress(metrics)


def _progress_file(path: Path) -> tuple[float, float | None] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict):
        return None
    current, total = _number(document.get("current")), _number(document.get("total"))
    if current is None or current < 0:
        return None
    return current, total if total is not None and total > 0 else None


def _chart_progress(metrics: Path) -> tuple[float, float | None] | None:
    try:
        document = json.loads((metrics / META_FILE).read_text(encoding="utf-8"))
        metas = document["metas"]
        chart = next(meta for meta in metas if _number(meta.get("total")))
        name, x, total = str(chart["name"]), str(chart["x"]), float(chart["total"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, StopIteration):
        return None
    current = _last_x(metrics / f"{name}.jsonl", x)
    return None if current is None else (current, total if total > 0 else None)


def _last_x(path: Path, x: str) -> float | None:
    """The x of the chart's last complete point (a torn last line is skipped)."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            lines = handle.read().split(b"\n")
    except OSError:
        return None
    for line in reversed(lines):
        try:
            point = json.loads(line)
        except ValueError:
            continue
        value = _number(point.get(x)) if isinstance(point, dict) else None
        if value is not None:
            return value
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


class ProgressSampler:
    """Samples the training's progress in a thread of its own until ``stop``, which takes a
    last sample (a training that ended between two samples has its final progress)."""

    def __init__(self, metrics: Path, samples: Path, every: float) -> None:
        self.metrics, self.samples, self.every = metrics, samples, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress-sampler", daemon=True)
        self._last: tuple[float, float | None] | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.sample()

    def sample(self) -> None:
        """Append the progress now, if it changed since the last sample."""
        progress = read_progress(self.metrics)
        if progress is None or progress == self._last:
            return
        self._last = progress
        row = {"time": time.time(), "current": progress[0], "total": progress[1]}
        with self.samples.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.sample()
            except OSError:  # the folder may be briefly unreadable: the next sample tries
                continue


class TrainingPhases:
    """The wrapper's part of a node's phases: ``training`` (and sampling its progress) from
    the command's start, ``uploading`` from its end. A file that cannot be written is returned
    as a problem for the sidecar log, never raised: the training matters more than its
    progress bar."""

    def __init__(
        self, *, phase_file: Path | None, samples: Path | None, metrics: str | None, every: float
    ) -> None:
        self.phase_file = phase_file
        self.sampler = (
            ProgressSampler(Path(metrics), samples, every) if samples and metrics else None
        )

    def started(self) -> list[str]:
        problems = self._phase("training")
        if self.sampler is not None:
            self.sampler.start()
        return problems

    def ended(self) -> list[str]:
        problems = []
        if self.sampler is not None:
            try:
                self.sampler.stop()
            except OSError as error:
                problems.append(f"last progress sample not written: {error}")
        return problems + self._phase("uploading")

    def _phase(self, phase: str) -> list[str]:
        if self.phase_file is None:
            return []
        try:
            write_phase(self.phase_file, phase)
        except OSError as error:
            return [f"phase {phase} not recorded: {error}"]
        return []
