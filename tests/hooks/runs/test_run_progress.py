"""A run's phases and progress, recorded and read where they are: the run folder (local
launcher) or the object store (a pod's init container and sidecar)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agent.node_progress import write_phase
from hooks.kubernetes.pod_node import NodeSync, stage_pod_node
from hooks.runs.run_files import FolderRunFiles, StoreRunFiles, folder_then_store
from hooks.runs.run_progress import RunPhases, StagingPhase, phase_sink, record_phase
from hooks.storage.local_store import LocalFolderStore
from octotrain.node_progress import (
    PHASE_FILE,
    PROGRESS_SAMPLES_FILE,
    Phase,
    PhaseRecord,
    parse_phase,
)
from octotrain.run_layout import RunLayout
from octotrain.stage_plans import StagePlan
from octotrain.storage import ObjectStore
from tests.hooks.inputs.test_node_cache import put_version

NODES = ["distributed-0", "distributed-1"]
PREFIX = "runs/7/manual-1"


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
    folder = FolderRunFiles(layout)
    now = time.time()
    record_phase(phase_sink(folder, NODES[0]), Phase.TRAINING)
    folder.write(layout.objects.progress(NODES[0]), samples(now - 20, 10, 1000).encode())
    sink = phase_sink(folder, NODES[1])
    sink(PhaseRecord(Phase.STAGING, now - 10, now, 100, 400))
    run = RunPhases(folder_then_store(layout, LocalFolderStore(tmp_path / "store"), live=True),
                    NODES)  # fmt: skip
    shown = run.progress(run_active=True, now=now)
    assert (shown.phase, shown.percent) == (Phase.STAGING, 25.0)
    assert shown.eta_seconds == pytest.approx(30.0)
    training = shown.nodes[0]
    assert (training.phase, training.percent) == (Phase.TRAINING, 9.0)
    assert training.eta_seconds == pytest.approx(910 / 5 - 2)
    written = sorted(path.relative_to(layout.run_dir).as_posix()
                     for path in layout.run_dir.rglob("*") if path.is_file())  # fmt: skip
    assert written == [  # each written whole: no partial file left
        "phases/distributed-0.json", "phases/distributed-1.json", "progress/distributed-0.jsonl",
    ]  # fmt: skip
    ended = run.progress(run_active=False, now=now)
    assert [node.phase for node in ended.nodes] == [Phase.DONE, Phase.DONE]


def test_phases_are_read_from_the_object_store(tmp_path: Path) -> None:
    """What a pod's containers put there; a node without a record is waiting."""
    store: ObjectStore = LocalFolderStore(tmp_path / "store")
    layout = RunLayout(tmp_path / "runs", 7, "manual__1")
    objects = layout.objects
    now = time.time()
    files = StoreRunFiles(store, objects)
    phase_sink(files, NODES[0])(PhaseRecord(Phase.TRAINING, now, now))
    sample_file = tmp_path / "samples.jsonl"
    sample_file.write_text("x" * 200_000 + "\n" + samples(now - 20, 10, 1000))
    store.put_file(objects.progress(NODES[0]), sample_file)
    shown = RunPhases(files, NODES).progress(run_active=True, now=now)
    assert [node.phase for node in shown.nodes] == [Phase.TRAINING, Phase.WAITING]
    assert shown.nodes[0].current == 90.0  # the tail of a long file is enough
    assert shown.phase is Phase.WAITING and shown.eta_seconds is None
    stored = parse_phase(store.read_range(objects.phase(NODES[0]), 0, 200))
    assert stored is not None and stored.phase is Phase.TRAINING


def test_a_pods_phases_reach_the_store_through_the_same_files(tmp_path: Path) -> None:
    """The init container records staging then waiting in the store; the sidecar uploads
    what the wrapper writes in the work folder; the run's reader finds both there."""
    store = LocalFolderStore(tmp_path / "objects")
    data = put_version(store, tmp_path, "datasets/p/houses/v1", {"train.csv": b"a,b\n" * 1000})
    layout = RunLayout(tmp_path / "runs", 7, "manual-1")  # no run folder here: the store's
    files = StoreRunFiles(store, layout.objects)
    stage_plan = StagePlan.of([data], [], checkpoint_sources=[])
    files.write(f"{PREFIX}/stage.json", stage_plan.model_dump_json().encode())
    work = tmp_path / "work"
    stage_pod_node(store, plan_key=f"{PREFIX}/stage.json", task_id=7, node_index="single-0",
                   work=work, cache_dir=tmp_path / "cache", agent_dir=tmp_path / "agent",
                   cache_max_bytes=1 << 30)  # fmt: skip
    reader = RunPhases(files, ["single-0"])
    assert reader.progress(run_active=True, now=time.time()).phase is Phase.WAITING
    assert parse_phase(store.read_range(layout.objects.phase("single-0"), 0, 500)) is not None

    write_phase(work / PHASE_FILE, "training")  # what the wrapper writes, as in the pod
    (work / PROGRESS_SAMPLES_FILE).write_text(samples(time.time() - 20, 10, 1000))
    NodeSync(store, prefix=PREFIX, task_id=7, node_index="single-0", work=work,
             run_id="manual-1", checkpoint_every=30.0).sync()  # fmt: skip
    shown = reader.progress(run_active=True, now=time.time())
    assert (shown.phase, shown.percent) == (Phase.TRAINING, 9.0)
    assert shown.eta_seconds is not None
