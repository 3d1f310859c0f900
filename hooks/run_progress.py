"""The door to a run's phases and progress: recording a node's phase (staging's bytes
included), and reading every node's, from the run folder while the local launcher runs it,
else from the object store (where a pod's init container and sidecar put them).

The rules (phases, percent, the estimate) are ``octotrain/node_progress.py``'s.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from hooks.object_store import default_object_store
from hooks.run_files import write_text
from octotrain.catalog.models import Run
from octotrain.node_progress import (
    Phase,
    PhaseRecord,
    RunProgress,
    node_progress,
    parse_phase,
    parse_samples,
    run_progress,
)
from octotrain.run_layout import RunLayout, recorded_layout
from octotrain.run_lifecycle import ACTIVE_RUN_STATES
from octotrain.settings import get_settings
from octotrain.storage import ObjectNotFound, ObjectStore

# Staging's bytes are recorded at most this often (a download calls back for every chunk).
STAGING_RECORD_SECONDS = 1.0
# The end of the progress samples that is read: hours of samples, more than any estimate uses.
SAMPLES_TAIL_BYTES = 128 * 1024

PhaseSink = Callable[[PhaseRecord], None]


def phase_file_sink(path: Path) -> PhaseSink:
    """Record phases in a local file (written whole, then renamed)."""

    def record(phase: PhaseRecord) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(json.dumps(phase.document()), encoding="utf-8")
        partial.replace(path)

    return record


def phase_store_sink(store: ObjectStore, key: str) -> PhaseSink:
    """Record phases in the object store (a pod's init container: no sidecar runs yet)."""
    return lambda phase: write_text(store, key, json.dumps(phase.document()))


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
    """Every node's phase file and progress samples, where the run's files are."""

    def __init__(self, layout: RunLayout, store: ObjectStore, nodes: list[str]) -> None:
        self.layout, self.store, self.nodes = layout, store, nodes

    def progress(self, *, run_active: bool, now: float) -> RunProgress:
        shown = []
        for node in self.nodes:
            record = parse_phase(
                self._tail(self.layout.phase_path(node), self.layout.objects.phase(node))
            )
            samples = parse_samples(
                self._tail(self.layout.progress_path(node), self.layout.objects.progress(node))
            )
            shown.append(node_progress(node, record, samples, run_active=run_active, now=now))
        return run_progress(shown, run_active=run_active)

    def _tail(self, local: Path, key: str) -> bytes:
        """The file's last ``SAMPLES_TAIL_BYTES`` (a phase file is far smaller): the local one
        when it exists, else the object's; nothing when neither does."""
        if local.is_file():
            with local.open("rb") as handle:
                size = handle.seek(0, 2)
                handle.seek(max(0, size - SAMPLES_TAIL_BYTES))
                return handle.read()
        try:
            size = self.store.stat(key).size
            return self.store.read_range(key, max(0, size - SAMPLES_TAIL_BYTES), size)
        except ObjectNotFound:
            return b""


def progress_of(run: Run, *, now: float, store: ObjectStore | None = None) -> RunProgress:
    """A catalog run's progress, read where this machine's settings say its files are."""
    layout, nodes = recorded_layout(get_settings().runs_dir, run.task_id, run.plan or {})
    phases = RunPhases(layout, store or default_object_store(), nodes)
    return phases.progress(run_active=run.state in ACTIVE_RUN_STATES, now=now)
