"""The door to a run's phases and progress: recording a node's phase (staging's bytes
included), and reading every node's, among the run's files where its launcher keeps them
(``RunFiles``).

The rules (phases, percent, the estimate) are ``octotrain/node_progress.py``'s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from octotrain.node_progress import (
    Phase,
    PhaseRecord,
    RunProgress,
    node_progress,
    parse_phase,
    parse_samples,
    run_progress,
)
from octotrain.run_files import RunFiles, tail, write_json

# Staging's bytes are recorded at most this often (a download calls back for every chunk).
STAGING_RECORD_SECONDS = 1.0
# The end of the progress samples that is read: hours of samples, more than any estimate uses.
SAMPLES_TAIL_BYTES = 128 * 1024

PhaseSink = Callable[[PhaseRecord], None]


def phase_sink(files: RunFiles, node_index: str) -> PhaseSink:
    """Record node ``node_index``'s phases among the run's files (each written whole)."""
    key = files.objects.phase(node_index)
    return lambda phase: write_json(files, key, phase.document())


def record_phase(sink: PhaseSink, phase: Phase) -> None:
    now = time.time()
    sink(PhaseRecord(phase, now, now))


class StagingPhase:
    """A node's ``staging`` phase with its bytes done, recorded at most every
    ``STAGING_RECORD_SECONDS`` and once more when it ends (``finished``)."""

    def __init__(self, sink: PhaseSink) -> None:
        self.sink = sink
        self.since = time.time()
        self.last = 0.0
        self.lock = threading.Lock()
        self.sink(PhaseRecord(Phase.STAGING, self.since, self.since))

    def bytes_done(self, done: int, total: int) -> None:
        with self.lock:
            now = time.monotonic()
            if now - self.last < STAGING_RECORD_SECONDS and done < total:
                return
            self.last = now
            self.sink(PhaseRecord(Phase.STAGING, self.since, time.time(), done, total))

    def finished(self) -> None:
        """Staged: the node now waits for its training to be started."""
        record_phase(self.sink, Phase.WAITING)


class RunPhases:
    """Every node's phase file and progress samples, the last ``SAMPLES_TAIL_BYTES`` of each
    (a phase file is far smaller)."""

    def __init__(self, files: RunFiles, nodes: list[str]) -> None:
        self.files, self.nodes = files, nodes

    def progress(self, *, run_active: bool, now: float) -> RunProgress:
        shown = []
        objects = self.files.objects
        for node in self.nodes:
            record = parse_phase(tail(self.files, objects.phase(node), SAMPLES_TAIL_BYTES))
            samples = parse_samples(tail(self.files, objects.progress(node), SAMPLES_TAIL_BYTES))
            shown.append(node_progress(node, record, samples, run_active=run_active, now=now))
        return run_progress(shown, run_active=run_active)
