"""Where each node of a run is, how far along, and an honest estimate of when it will be done.

A node goes through five phases, always in this order (a node started again after a retry may
go back to an earlier one):

- ``waiting``: for resources (a worker slot, a pod being scheduled, its image being pulled);
- ``staging``: its inputs are being downloaded, ``bytes_done`` of ``bytes_total``;
- ``training``: the algorithm runs; its progress is what the node's wrapper sampled, with the
  time, from ``$METRICS/progress.json`` (``{"current": …, "total": …}``) or else from the last
  x of the chart whose meta declares a ``total`` (``agent/node_progress.py``);
- ``uploading``: the training has ended, its files are being saved;
- ``done``.

Who records them: ``stage_data`` (or a pod's init container) writes ``staging`` with its bytes,
then ``waiting``; the wrapper ``training`` when the command starts and ``uploading`` when it
ends; the local launch task or the pod's sidecar ``done``. Nothing recorded yet is ``waiting``;
a run that has ended has every node ``done``, whatever its last record said.

The estimate never guesses: none before ``MIN_POINTS`` samples spanning ``MIN_SPAN_SECONDS``
with progress in them, none once no progress has come for ``STALE_SECONDS``; the rate is the
least-squares slope over the last ``WINDOW_SECONDS`` (smoothed, so one slow step does not make
it jump), counted only from the last time progress went backwards (a node that restarted from
an earlier checkpoint); never negative. A run's estimate is its slowest node's.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Samples the rate is measured over: the last WINDOW_SECONDS of them (at least MIN_POINTS).
WINDOW_SECONDS = 120.0
MIN_POINTS = 3
MIN_SPAN_SECONDS = 5.0
# No progress for this long: the node may be stuck, so no estimate rather than a wrong one.
STALE_SECONDS = 300.0
# Staging's rate is its average since it began, once it has run this long.
MIN_STAGING_SECONDS = 2.0


# The files, in a node's folder (locally) or its pod's work folder.
PHASE_FILE = "phase.json"
PROGRESS_SAMPLES_FILE = "progress.jsonl"


def wrapper_arguments(*, phase_file: str, progress_file: str) -> list[str]:
    """The node wrapper's options that make it record its phase and sample its progress
    (``agent/run_training.py``)."""
    return ["--phase-file", phase_file, "--progress-file", progress_file]


class Phase(enum.StrEnum):
    WAITING = "waiting"
    STAGING = "staging"
    TRAINING = "training"
    UPLOADING = "uploading"
    DONE = "done"

    @property
    def order(self) -> int:
        return list(Phase).index(self)


@dataclass(frozen=True)
class PhaseRecord:
    """A node's last recorded phase, since when (epoch seconds), and staging's bytes."""

    phase: Phase
    since: float
    updated: float
    bytes_done: int | None = None
    bytes_total: int | None = None

    def document(self) -> dict[str, Any]:
        """The phase file's content (``phase.json``)."""
        record: dict[str, Any] = {"phase": str(self.phase), "since": self.since,
                                  "updated": self.updated}  # fmt: skip
        if self.bytes_total is not None:
            record |= {"bytes_done": self.bytes_done or 0, "bytes_total": self.bytes_total}
        return record


def parse_phase(text: str | bytes | None) -> PhaseRecord | None:
    """A phase file as written by ``PhaseRecord.document`` (or the agent); None when there is
    none or it cannot be read (a reader never fails over it: the node is then ``waiting``)."""
    if not text:
        return None
    try:
        document = json.loads(text)
        phase = Phase(document["phase"])
        since = _number(document.get("since"))
        updated = _number(document.get("updated", since))
    except (ValueError, KeyError, TypeError):
        return None
    if since is None or updated is None:
        return None
    done, total = _count(document.get("bytes_done")), _count(document.get("bytes_total"))
    return PhaseRecord(phase, since, updated, done, total)


@dataclass(frozen=True)
class ProgressSample:
    """The training's progress at ``time`` (epoch seconds), as the wrapper sampled it."""

    time: float
    current: float
    total: float | None = None


def parse_samples(text: str | bytes) -> list[ProgressSample]:
    """The samples of a ``progress.jsonl``, one JSON object a line; torn or broken lines are
    skipped, never an error (the file is appended to while it is read)."""
    samples = []
    for line in (text.decode("utf-8", "replace") if isinstance(text, bytes) else text).split("\n"):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict):
            continue
        time, current = _number(row.get("time")), _number(row.get("current"))
        total = _number(row.get("total"))
        if time is not None and current is not None:
            samples.append(ProgressSample(time, current, total if total and total > 0 else None))
    return samples


def training_eta(samples: Sequence[ProgressSample], *, now: float) -> float | None:
    """Seconds until the last sample's ``current`` reaches its ``total``; None when the
    samples do not say (see the module's rules)."""
    run = since_last_drop(samples)
    if not run or run[-1].total is None:
        return None
    last = run[-1]
    if now - last.time > STALE_SECONDS and last.current < last.total:
        return None
    if last.current >= last.total:
        return 0.0
    window = [sample for sample in run if sample.time >= last.time - WINDOW_SECONDS]
    if len(window) < MIN_POINTS:
        window = run[-MIN_POINTS:]
    if len(window) < MIN_POINTS or window[-1].time - window[0].time < MIN_SPAN_SECONDS:
        return None
    rate = _slope(window)
    if rate is None or rate <= 0:
        return None
    return max(0.0, (last.total - last.current) / rate - max(0.0, now - last.time))


def since_last_drop(samples: Sequence[ProgressSample]) -> list[ProgressSample]:
    """The samples after progress last went backwards (a restart from an earlier checkpoint):
    the rate before it says nothing of the rate now."""
    start = 0
    for index in range(1, len(samples)):
        if samples[index].current < samples[index - 1].current:
            start = index
    return list(samples[start:])


def _slope(window: Sequence[ProgressSample]) -> float | None:
    """Progress per second, the least-squares fit of the window."""
    mean_t = sum(sample.time for sample in window) / len(window)
    mean_c = sum(sample.current for sample in window) / len(window)
    spread = sum((sample.time - mean_t) ** 2 for sample in window)
    if spread <= 0:
        return None
    covariance = sum((s.time - mean_t) * (s.current - mean_c) for s in window)
    return covariance / spread


def staging_eta(record: PhaseRecord) -> float | None:
    """Seconds left of staging at its average rate so far; None before it has run
    ``MIN_STAGING_SECONDS`` or moved a byte, or when its total is unknown."""
    if not record.bytes_total or record.bytes_done is None:
        return None
    elapsed = record.updated - record.since
    if elapsed < MIN_STAGING_SECONDS or record.bytes_done <= 0:
        return None
    left = max(0, record.bytes_total - record.bytes_done)
    return left / (record.bytes_done / elapsed)


@dataclass(frozen=True)
class NodeProgress:
    """What a page and the API show of one node: its phase, since when, how far (``percent``
    of staging's bytes or of the training's total; None when unknown) and the estimate."""

    node: str
    phase: Phase
    since: float | None = None
    percent: float | None = None
    eta_seconds: float | None = None
    current: float | None = None
    total: float | None = None
    bytes_done: int | None = None
    bytes_total: int | None = None


def node_progress(
    node: str,
    record: PhaseRecord | None,
    samples: Sequence[ProgressSample],
    *,
    run_active: bool,
    now: float,
) -> NodeProgress:
    """One node's progress from its phase file and its progress samples."""
    last = samples[-1] if samples else None
    current, total = (last.current, last.total) if last else (None, None)
    phase = record.phase if record else Phase.WAITING
    if not run_active:
        phase = Phase.DONE
    since = record.since if record and record.phase == phase else None
    shown = NodeProgress(node, phase, since, _percent(current, total), None, current, total)
    if phase is Phase.STAGING and record is not None:
        done, all_bytes = record.bytes_done, record.bytes_total
        return NodeProgress(node, phase, since, _percent(done, all_bytes), staging_eta(record),
                            bytes_done=done, bytes_total=all_bytes)  # fmt: skip
    if phase is Phase.TRAINING:
        return NodeProgress(node, phase, since, shown.percent, training_eta(samples, now=now),
                            current, total)  # fmt: skip
    return shown


@dataclass(frozen=True)
class RunProgress:
    """A run's progress: the phase of its least advanced node, that node's percent (the
    lowest), and the slowest node's estimate (none while any node of that phase has none)."""

    phase: Phase
    percent: float | None
    eta_seconds: float | None
    nodes: list[NodeProgress]


def run_progress(nodes: Sequence[NodeProgress], *, run_active: bool) -> RunProgress:
    if not nodes:
        return RunProgress(Phase.WAITING if run_active else Phase.DONE, None, None, [])
    phase = min((node.phase for node in nodes), key=lambda phase: phase.order)
    behind = [node for node in nodes if node.phase is phase]
    percents = [node.percent for node in behind]
    etas = [node.eta_seconds for node in behind]
    percent = None if None in percents else min(p for p in percents if p is not None)
    eta = None if None in etas else max(e for e in etas if e is not None)
    if phase in (Phase.WAITING, Phase.UPLOADING, Phase.DONE):
        eta = None
    return RunProgress(phase, percent, eta, list(nodes))


def _percent(done: float | None, total: float | None) -> float | None:
    if done is None or not total or total <= 0:
        return None
    return min(100.0, max(0.0, 100.0 * done / total))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number >= 0 else None
