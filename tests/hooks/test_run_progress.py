"""A run's phases and progress, recorded and read where they are: the run folder (local
launcher) or the object store (a pod's init container and sidecar)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from hooks.local_store import LocalFolderStore
from hooks.run_progress import (
    RunPhases,
    StagingPhase,
    phase_file_sink,
    phase_store_sink,
    record_phase,
)
from octotrain.node_progress import Phase, PhaseRecord, parse_phase
from octotrain.run_layout import RunLayout
from octotrain.storage import ObjectStore

NODES = ["distributed-0", "distributed-1"]


def samples(start: float, count: int, total: float) -> str:
    return "".join(
        json.dumps({"time": start + 2 * n, "current": 10 * n, "total": total}) + "\n"
        for n in range(count)
    )


def test_staging_records_its_bytes_at_most_every_second_and_its_end() -> None:
    records: list[PhaseRecord] = []
    staging = StagingPhase(records.append)
    for done in range(0, 1000, 10):
        staging.bytes_done(done, 1000)
    staging.bytes_done(1000, 1000)  # the last bytes always count
    staging.finished()
    assert records[0].phase is Phase.STAGING and records[0].bytes_total is None
    staged = [record for record in records if record.bytes_total is not None]
    assert 1 <= len(staged) <= 3
    assert staged[-1].bytes_done == 1000
    assert records[-1].phase is Phase.WAITING


def test_phases_are_read_from_the_run_folder(tmp_path: Path) -> None:
    layout = RunLayout(tmp_path / "runs", 7, "manual__1")
    now = time.time()
    record_phase(phase_file_sink(layout.phase_path(NODES[0])), Phase.TRAINING)
    layout.progress_path(NODES[0]).write_text(samples(now - 20, 10, 1000))
    sink = phase_file_sink(layout.phase_path(NODES[1]))
    sink(PhaseRecord(Phase.STAGING, now - 10, now, 100, 400))
    run = RunPhases(layout, LocalFolderStore(tmp_path / "store"), NODES)
    shown = run.progress(run_active=True, now=now)
    assert (shown.phase, shown.percent) == (Phase.STAGING, 25.0)
    assert shown.eta_seconds == pytest.approx(30.0)
    training = shown.nodes[0]
    assert (training.phase, training.percent) == (Phase.TRAINING, 9.0)
    assert training.eta_seconds == pytest.approx(910 / 5 - 2)
    assert [path.name for path in layout.phase_path(NODES[0]).parent.iterdir()] == [
        "phase.json", "progress.jsonl",
    ]  # fmt: skip
    ended = run.progress(run_active=False, now=now)
    assert [node.phase for node in ended.nodes] == [Phase.DONE, Phase.DONE]


def test_phases_are_read_from_the_object_store(tmp_path: Path) -> None:
    """What a pod's containers put there; a node without a record is waiting."""
    store: ObjectStore = LocalFolderStore(tmp_path / "store")
    layout = RunLayout(tmp_path / "runs", 7, "manual__1")
    objects = layout.objects
    now = time.time()
    phase_store_sink(store, objects.phase(NODES[0]))(PhaseRecord(Phase.TRAINING, now, now))
    sample_file = tmp_path / "samples.jsonl"
    sample_file.write_text("x" * 200_000 + "\n" + samples(now - 20, 10, 1000))
    store.put_file(objects.progress(NODES[0]), sample_file)
    shown = RunPhases(layout, store, NODES).progress(run_active=True, now=now)
    assert [node.phase for node in shown.nodes] == [Phase.TRAINING, Phase.WAITING]
    assert shown.nodes[0].current == 90.0  # the tail of a long file is enough
    assert shown.phase is Phase.WAITING and shown.eta_seconds is None
    stored = parse_phase(store.read_range(objects.phase(NODES[0]), 0, 200))
    assert stored is not None and stored.phase is Phase.TRAINING
