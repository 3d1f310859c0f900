"""Hang detection: a training whose process is alive but whose train log and ``METRICS`` have
not advanced for ``hang_after_seconds`` is reported as hung, and stopped as hung if its task
asks for it (``stop_when_hung``).

A training that is computing writes something now and then: a log line, a metrics point. One
that waits forever (a dead rendezvous peer, a deadlocked data loader, a collective that never
returns) writes nothing while its process stays alive, so neither its exit status nor a time
limit says anything until hours are lost. The wrapper (``run_training.py``) runs a
``HangWatch`` beside the training: ``HangDetector`` decides from what it is shown and a clock
it is given (no thread, no sleep: tests feed it), ``HangWatch`` shows it the node's files every
few seconds. When it says hung, the wrapper notes it in the sidecar log and writes the hang
report (``--hang-report``, JSON, removed when the training advances again), which the launcher
reads to say so in the Airflow task log and the run view; with ``stop_when_hung`` it stops the
training as a time limit does (SIGTERM, the grace period, SIGKILL) and exits with
``HUNG_EXIT_STATUS``.

Imports nothing of the project: this file is copied into images that do not have it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# The wrapper's exit status when it stopped a hung training (the launchers know it as
# octotrain.exit_codes.HUNG_EXIT_STATUS; this folder imports nothing of Octotrain). Beside
# 124, the time limit's, and free of a shell's (126, 127) and of signals' (128 + N).
HUNG_EXIT_STATUS = 122
# The most seconds between two looks at the node's files, and the fewest.
MAX_POLL_SECONDS = 5.0
MIN_POLL_SECONDS = 0.05

# What advancing is measured by: the train log's size and every METRICS file's path and size.
ProgressMark = tuple[int, tuple[tuple[str, int], ...]]


def progress_mark(train_log: Path, metrics: Path | None) -> ProgressMark:
    """The node's progress as its files show it: any change is progress. Sizes, not times: a
    file touched without a byte written is no sign of life."""
    try:
        log_size = train_log.stat().st_size
    except FileNotFoundError:
        log_size = 0
    files: list[tuple[str, int]] = []
    for folder, _subfolders, names in os.walk(metrics) if metrics is not None else ():
        for name in names:
            path = os.path.join(folder, name)
            try:
                files.append((os.path.relpath(path, metrics), os.stat(path).st_size))
            except FileNotFoundError:  # replaced while looked at: the next look sees it
                continue
    return log_size, tuple(sorted(files))


@dataclass(frozen=True)
class HangEvent:
    """A change of the training's state: ``hung`` once it has been silent for the threshold,
    ``advancing`` when a hung training writes again; ``silent_seconds``: how long it was."""

    kind: Literal["hung", "advancing"]
    silent_seconds: float


class HangDetector:
    """Decides from progress marks and the times it reads from ``clock`` (seconds, monotonic)
    whether the training hangs; each change of state is answered once."""

    def __init__(self, *, hang_after_seconds: float, clock: Callable[[], float]) -> None:
        if hang_after_seconds <= 0:
            raise ValueError(f"hang_after_seconds must be above 0; got {hang_after_seconds}")
        self.hang_after_seconds = hang_after_seconds
        self._clock = clock
        self._mark: ProgressMark | None = None
        self._since = clock()
        self._hung = False

    def observe(self, mark: ProgressMark) -> HangEvent | None:
        """Take the node's latest mark; the change of state it makes, if any."""
        now = self._clock()
        if mark != self._mark:
            silent = now - self._since
            self._mark, self._since = mark, now
            if self._hung:
                self._hung = False
                return HangEvent("advancing", silent)
            return None
        silent = now - self._since
        if not self._hung and silent >= self.hang_after_seconds:
            self._hung = True
            return HangEvent("hung", silent)
        return None


class HangWatch:
    """Shows a ``HangDetector`` the node's files every few seconds, in a thread of its own,
    until ``stop()``, passing each event to ``on_event``."""

    def __init__(
        self,
        *,
        detector: HangDetector,
        train_log: Path,
        metrics: Path | None,
        on_event: Callable[[HangEvent], None],
    ) -> None:
        self.detector = detector
        self.train_log, self.metrics, self.on_event = train_log, metrics, on_event
        # Ten looks within the threshold: a hang is seen at most a tenth of it late.
        self.poll_seconds = min(
            MAX_POLL_SECONDS, max(MIN_POLL_SECONDS, detector.hang_after_seconds / 10)
        )
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="octotrain-hang-watch", daemon=True)

    def start(self) -> None:
        self.detector.observe(progress_mark(self.train_log, self.metrics))
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while not self._done.wait(self.poll_seconds):
            event = self.detector.observe(progress_mark(self.train_log, self.metrics))
            if event is not None:
                self.on_event(event)


def watch_for_hangs(
    *,
    hang_after_seconds: float | None,
    stop_when_hung: bool,
    train_log: Path,
    metrics: Path | None,
    report: Path | None,
    note: Callable[[str], None],
    stop: Callable[[dict[str, float]], None],
) -> HangWatch | None:
    """The wrapper's hang watch, started (None without ``hang_after_seconds``): each event is
    noted (``note``: the sidecar log) and kept in ``report`` while the training hangs; with
    ``stop_when_hung`` the first hang calls ``stop`` with the facts for the exit file and ends
    the watch."""
    if hang_after_seconds is None:
        return None
    threshold = hang_after_seconds
    detector = HangDetector(hang_after_seconds=threshold, clock=time.monotonic)
    watch: HangWatch

    def on_event(event: HangEvent) -> None:
        if event.kind == "advancing":
            note(f"the training advanced again after {event.silent_seconds:.0f}s of silence")
            if report is not None:
                report.unlink(missing_ok=True)
            return
        facts = {"silent_seconds": round(event.silent_seconds, 1), "hang_after_seconds": threshold}
        note(
            f"the training looks hung: its process is alive but its log and METRICS have not "
            f"advanced for {event.silent_seconds:.0f}s (hang_detection.after_seconds: "
            f"{threshold:g})"
        )
        if report is not None:
            _write_report(report, facts)
        if stop_when_hung:
            note("stopping the hung training (stop_when_hung)")
            watch.stop()
            stop(facts)

    watch = HangWatch(detector=detector, train_log=train_log, metrics=metrics, on_event=on_event)
    watch.start()
    return watch


def _write_report(path: Path, facts: dict[str, float]) -> None:
    """The hang report, written whole, then renamed (the launcher may read it at any time)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(facts))
    partial.replace(path)
