"""What the init container and the sidecar of a training pod do, against a local store: the
stage plan staged into read-only DATASET/MODEL views, logs and metrics uploaded as they
change, OUTPUT with its manifest and the exit status at the end."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hooks.inputs.node_cache import NodeCache
from hooks.kubernetes.pod_node import NodeSync, stage_pod_node
from hooks.runs.checkpoint_sync import CheckpointSync
from hooks.storage.local_store import LocalFolderStore
from octotrain.manifests import content_digest
from octotrain.run_layout import RunObjects, node_cache_holder
from octotrain.stage_plans import StagePlan
from tests.hooks.inputs.test_node_cache import put_version
from tests.stored_run_files import store_text, stored_json, stored_text

PREFIX = "runs/7/manual-1"
# What every sidecar here is started with beside its work folder.
SIDECAR = {"run_id": "manual-1", "checkpoint_every": 30.0}
GIB = 1024**3


@pytest.fixture
def store(tmp_path: Path) -> LocalFolderStore:
    return LocalFolderStore(tmp_path / "objects")


def test_stage_lays_out_the_work_folder_and_stages_the_plan(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    data = put_version(store, tmp_path, "datasets/p/houses/v1", {"train.csv": b"a,b\n1,2\n"})
    model = put_version(store, tmp_path, "models/p/base/v3", {"weights.bin": b"\x01" * 100})
    store_text(
        store,
        f"{PREFIX}/stage.json",
        StagePlan.of([data], [model], checkpoint_sources=[]).model_dump_json(),
    )
    work, agent = tmp_path / "work", tmp_path / "agent"
    stage_pod_node(store, plan_key=f"{PREFIX}/stage.json", task_id=7, node_index="single-0",
                   work=work, cache_dir=tmp_path / "cache", agent_dir=agent,
                   cache_max_bytes=GIB)  # fmt: skip
    assert (work / "dataset" / data.name / "train.csv").read_bytes() == b"a,b\n1,2\n"
    assert (work / "model" / "weights.bin").read_bytes() == b"\x01" * 100  # one model: whole
    assert not os.access(work / "dataset" / data.name / "train.csv", os.W_OK) or os.getuid() == 0
    assert (agent / "run_training.py").is_file()
    assert "no checkpoint to restore: CHECKPOINT is empty" in stored_text(
        store, f"{PREFIX}/logs/train-7-single-0-init.log"
    )
    for folder in ("output", "metrics", "mounts", "checkpoint"):
        assert (work / folder).is_dir()
    logs = sorted(p.name for p in (work / "logs").iterdir())
    assert logs == ["train-7-single-0-init.log", "train-7-single-0-sidecar.log",
                    "train-7-single-0.log"]  # fmt: skip
    uploaded = stored_text(store, f"{PREFIX}/logs/train-7-single-0-init.log")
    assert "data preparation finished for node single-0" in uploaded


def test_stage_restores_the_newest_checkpoint_of_the_first_source_that_has_one(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    earlier = RunObjects(7, "manual-0")
    earlier_node = tmp_path / "earlier-checkpoint"
    earlier_node.mkdir()
    (earlier_node / "step-20.pt").write_bytes(b"s" * 2048)
    sync = CheckpointSync(store, objects=earlier, run_id="manual__0", node_index="single-0",
                          folder=earlier_node, every_seconds=0, note=lambda _: None)  # fmt: skip
    assert sync.sync(final=True)
    sources = [RunObjects.from_prefix(PREFIX), earlier]  # this run has none yet
    store_text(store, f"{PREFIX}/stage.json",
               StagePlan.of([], [], checkpoint_sources=sources).model_dump_json())  # fmt: skip
    work = tmp_path / "work"
    stage_pod_node(store, plan_key=f"{PREFIX}/stage.json", task_id=7, node_index="single-0",
                   work=work, cache_dir=tmp_path / "cache", agent_dir=tmp_path / "agent",
                   cache_max_bytes=GIB)  # fmt: skip
    assert (work / "checkpoint" / "step-20.pt").read_bytes() == b"s" * 2048
    init_log = stored_text(store, f"{PREFIX}/logs/train-7-single-0-init.log")
    assert "restored checkpoint: 1 files, 0.0 MiB into CHECKPOINT from run manual__0" in init_log


def test_a_stage_that_fails_says_why_in_the_uploaded_init_log(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    data = put_version(store, tmp_path, "datasets/p/houses/v1", {"train.csv": b"rows"})
    (tmp_path / "objects" / "datasets/p/houses/v1/train.csv").unlink()
    store_text(
        store,
        f"{PREFIX}/stage.json",
        StagePlan.of([data], [], checkpoint_sources=[]).model_dump_json(),
    )
    with pytest.raises(Exception, match=r"train\.csv"):
        stage_pod_node(store, plan_key=f"{PREFIX}/stage.json", task_id=7,
                       node_index="distributed-1", work=tmp_path / "work",
                       cache_dir=tmp_path / "cache", agent_dir=tmp_path / "agent",
                       cache_max_bytes=GIB)  # fmt: skip
    uploaded = stored_text(store, f"{PREFIX}/logs/train-7-distributed-1-init.log")
    assert "ERROR staging failed" in uploaded and "train.csv" in uploaded


def work_folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    for folder in ("logs", "metrics/loss", "output/ckpt"):
        (work / folder).mkdir(parents=True)
    (work / "logs" / "train-7-distributed-0.log").write_text("epoch 1\n")
    (work / "metrics" / "loss" / "data.jsonl").write_text('{"step": 1, "value": 0.5}\n')
    (work / "resources.jsonl").write_text('{"cpu_percent": 10}\n')
    return work


def test_sync_uploads_only_what_changed(store: LocalFolderStore, tmp_path: Path) -> None:
    work = work_folder(tmp_path)
    sidecar = NodeSync(
        store, prefix=PREFIX, task_id=7, node_index="distributed-0", work=work, **SIDECAR
    )
    puts: list[str] = []
    original = store.put_file
    store.put_file = lambda key, path, **kw: puts.append(key) or original(key, path, **kw)  # type: ignore[method-assign]
    sidecar.sync()
    assert set(puts) == {
        f"{PREFIX}/logs/train-7-distributed-0.log",
        f"{PREFIX}/metrics/distributed-0/loss/data.jsonl",
        f"{PREFIX}/resources/distributed-0.jsonl",
    }
    puts.clear()
    sidecar.sync()
    assert puts == []
    with (work / "logs" / "train-7-distributed-0.log").open("a") as log:
        log.write("epoch 2\n")
    sidecar.sync()
    assert puts == [f"{PREFIX}/logs/train-7-distributed-0.log"]
    assert stored_text(store, puts[0]) == "epoch 1\nepoch 2\n"


def test_sync_uploads_the_checkpoint_while_the_training_runs_when_it_is_due(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    work = work_folder(tmp_path)
    (work / "checkpoint").mkdir()
    saved = work / "checkpoint" / "step-10.pt"
    saved.write_bytes(b"state")
    os.utime(saved, (time.time() - 10, time.time() - 10))  # written a while ago: settled
    sidecar = NodeSync(store, prefix=PREFIX, task_id=7, node_index="distributed-0", work=work,
                       run_id="manual-1", checkpoint_every=0)  # fmt: skip
    sidecar.sync()
    manifest = stored_json(store, f"{PREFIX}/checkpoints/distributed-0.json")
    assert list(manifest["files"]) == ["step-10.pt"] and manifest["run_id"] == "manual-1"


def test_sync_notes_the_problems_of_the_meta_file_once(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    work = work_folder(tmp_path)
    sidecar = NodeSync(
        store, prefix=PREFIX, task_id=7, node_index="distributed-0", work=work, **SIDECAR
    )
    meta = {"name": "loss", "x": "step", "ys": ["value"], "description": "loss"}
    (work / "metrics" / "metrics.json").write_text(json.dumps({"metas": [meta, {"name": "x y"}]}))
    sidecar.sync()
    sidecar.sync()
    log = (work / "logs" / "train-7-distributed-0-sidecar.log").read_text()
    assert log.count("metrics.json breaks") == 1 and 'metas[1].name: "x y" must be' in log


def sigterm_once(condition: Callable[[], bool]) -> threading.Thread:
    """SIGTERM this process (as Kubernetes stops a sidecar) once ``condition()`` holds."""

    def watch() -> None:
        while not condition():
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def restored_sigterm() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


@pytest.mark.usefixtures("restored_sigterm")
def test_the_final_upload_follows_the_exit_status_and_the_sidecar_waits_to_be_stopped(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    work = work_folder(tmp_path)
    (work / "output" / "ckpt" / "model.pt").write_bytes(b"weights")
    exit_file, done_file = work / "exit-code", work / "upload-done"
    exit_file.write_text('{"exit_status": 137, "killed_after_grace_seconds": 2.0}')
    (work / "checkpoint").mkdir()
    (work / "checkpoint" / "step-30.pt").write_bytes(b"state")  # written a moment ago: final
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    cache.pin("a" * 64, node_cache_holder(PREFIX, "distributed-0"))  # as the stage container did
    cache.pin("a" * 64, node_cache_holder(PREFIX, "distributed-1"))  # another pod on the machine
    sidecar = NodeSync(store, prefix=PREFIX, task_id=7, node_index="distributed-0", work=work,
                       cache=cache, **SIDECAR)  # fmt: skip
    stopper = sigterm_once(done_file.exists)  # the wrapper sees it and the container ends
    ready = work / "sync-ready"
    assert sidecar.run(every=0.01, exit_file=exit_file, ready_file=ready, done_file=done_file) == 0
    assert ready.exists()
    stopper.join()
    manifest = stored_json(store, f"{PREFIX}/outputs/distributed-0.json")
    assert list(manifest) == ["ckpt/model.pt"] and content_digest(manifest)
    assert stored_text(store, f"{PREFIX}/output/distributed-0/ckpt/model.pt") == "weights"
    assert stored_json(store, f"{PREFIX}/exits/distributed-0.json") == {
        "exit_status": 137,
        "killed_after_grace_seconds": 2.0,
    }  # the wrapper's whole report reaches collect_logs
    sidecar_log = stored_text(store, f"{PREFIX}/logs/train-7-distributed-0-sidecar.log")
    assert "training ended (exit status 137)" in sidecar_log
    assert "uploaded OUTPUT: 1 files" in sidecar_log
    assert "checkpoint synced: 1 files" in sidecar_log  # CHECKPOINT at the end, whatever it is
    checkpoint = stored_json(store, f"{PREFIX}/checkpoints/distributed-0.json")
    assert list(checkpoint["files"]) == ["step-30.pt"]
    # the node's inputs may be evicted from the machine's cache now; the other node's stay
    pins = [pin.name for pin in (tmp_path / "cache" / ".pins" / ("a" * 64)).iterdir()]
    assert pins == [node_cache_holder(PREFIX, "distributed-1")]


@pytest.mark.usefixtures("restored_sigterm")
def test_sigterm_stops_the_sidecar_with_a_final_upload(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    work = work_folder(tmp_path)
    sidecar = NodeSync(
        store, prefix=PREFIX, task_id=7, node_index="distributed-0", work=work, **SIDECAR
    )
    started = time.monotonic()
    sigterm_once(lambda: time.monotonic() - started > 0.2)  # a stop, or an OOM-killed training
    done_file = work / "upload-done"
    ready = work / "sync-ready"
    code = sidecar.run(every=0.05, exit_file=work / "never", ready_file=ready, done_file=done_file)
    assert code == 0
    assert done_file.exists()
    assert stored_json(store, f"{PREFIX}/exits/distributed-0.json") == {"exit_status": None}
    assert stored_json(store, f"{PREFIX}/outputs/distributed-0.json") == {}
    sidecar_log = stored_text(store, f"{PREFIX}/logs/train-7-distributed-0-sidecar.log")
    assert "exit status none: stopped" in sidecar_log
