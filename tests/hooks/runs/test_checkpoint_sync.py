"""A node's CHECKPOINT folder synced to a local store and restored from it: only what changed
is uploaded, a file being written is never named by the manifest, removed files leave it, an
earlier run's objects are never deleted, and a restore is complete, verified and says from
where."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from hooks.runs.checkpoint_sync import (
    SYNC_NICENESS,
    BackgroundCheckpointSync,
    CheckpointSync,
    read_manifest,
    restore_checkpoint,
)
from hooks.storage.local_store import LocalFolderStore
from octotrain.run_layout import RunObjects
from octotrain.storage import ChecksumMismatch

RUN = RunObjects(7, "manual-1")
EARLIER = RunObjects(7, "manual-0")


@pytest.fixture
def store(tmp_path: Path) -> LocalFolderStore:
    return LocalFolderStore(tmp_path / "objects")


def settled(path: Path, content: bytes, *, age_seconds: float = 10) -> None:
    """Write ``path`` as a training that finished writing it ``age_seconds`` ago."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    then = time.time() - age_seconds
    os.utime(path, (then, then))


def checkpoint_sync(
    store: LocalFolderStore, folder: Path, notes: list[str], *, objects: RunObjects = RUN
) -> CheckpointSync:
    return CheckpointSync(store, objects=objects, run_id=f"run {objects.run_key}",
                          node_index="single-0", folder=folder, every_seconds=0,
                          note=notes.append)  # fmt: skip


def test_only_changed_settled_files_are_uploaded_and_named(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    folder, notes = tmp_path / "checkpoint", []
    settled(folder / "step-10.pt", b"a" * 100)
    settled(folder / "optim" / "state.bin", b"b" * 10)
    settled(folder / "step-20.pt.tmp", b"half")  # work in progress, by its name
    settled(folder / ".step-20.pt.swp", b"half")
    sync = checkpoint_sync(store, folder, notes)
    puts: list[str] = []
    original = store.put_file
    store.put_file = lambda key, path: puts.append(key) or original(key, path)  # type: ignore[method-assign]
    assert sync.sync()
    manifest = read_manifest(store, RUN, "single-0")
    assert manifest is not None and sorted(manifest.files) == ["optim/state.bin", "step-10.pt"]
    assert manifest.total_bytes == 110
    assert len(puts) == 3  # two files, then the manifest
    puts.clear()
    assert not sync.sync()  # nothing changed: nothing uploaded, not even the manifest
    assert puts == []
    assert notes == ["checkpoint synced: 2 files, 0.0 MiB (2 uploaded, 0 replaced or removed)"]


def test_a_file_written_a_moment_ago_waits_until_it_settles_or_the_training_ends(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    folder = tmp_path / "checkpoint"
    (folder).mkdir()
    (folder / "step-30.pt").write_bytes(b"being written")
    sync = checkpoint_sync(store, folder, [])
    assert not sync.sync()
    assert read_manifest(store, RUN, "single-0") is None
    assert sync.sync(final=True)  # the training has ended: nobody writes any more
    manifest = read_manifest(store, RUN, "single-0")
    assert manifest is not None and list(manifest.files) == ["step-30.pt"]


def test_a_file_that_changes_while_it_is_uploaded_is_not_named(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    folder = tmp_path / "checkpoint"
    settled(folder / "step-10.pt", b"old")
    sync = checkpoint_sync(store, folder, [])
    sync.sync()
    first = read_manifest(store, RUN, "single-0")
    settled(folder / "step-10.pt", b"newer, but torn")
    original = store.put_file

    def torn_upload(key: str, path: Path):  # type: ignore[no-untyped-def]
        info = original(key, path)
        with path.open("ab") as training:  # the training writes on meanwhile
            training.write(b" and more")
        return info

    store.put_file = torn_upload  # type: ignore[method-assign]
    assert not sync.sync()
    assert read_manifest(store, RUN, "single-0") == first  # the old version stays the latest
    assert [info.key for info in store.list(RUN.checkpoints("single-0"))] == [
        first.files["step-10.pt"].key  # type: ignore[union-attr]
    ]  # the torn upload was removed


def test_replaced_and_removed_files_leave_the_manifest_and_the_store(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    folder = tmp_path / "checkpoint"
    settled(folder / "step-10.pt", b"10")
    settled(folder / "last.pt", b"10")
    sync = checkpoint_sync(store, folder, [])
    sync.sync()
    (folder / "step-10.pt").unlink()  # the training keeps only the newest
    settled(folder / "step-20.pt", b"20")
    settled(folder / "last.pt", b"20", age_seconds=5)
    sync.sync()
    manifest = read_manifest(store, RUN, "single-0")
    assert manifest is not None and sorted(manifest.files) == ["last.pt", "step-20.pt"]
    keys = sorted(info.key for info in store.list(RUN.checkpoints("single-0")))
    assert keys == sorted(version.key for version in manifest.files.values())


def test_a_sync_waits_for_its_interval(store: LocalFolderStore, tmp_path: Path) -> None:
    folder = tmp_path / "checkpoint"
    settled(folder / "a.pt", b"a")
    sync = CheckpointSync(store, objects=RUN, run_id="r", node_index="single-0", folder=folder,
                          every_seconds=3600, note=lambda _: None)  # fmt: skip
    assert sync.sync()
    settled(folder / "b.pt", b"b")
    assert not sync.sync()  # too soon
    assert sync.sync(final=True)  # the end never waits


def test_restore_fills_the_folder_from_an_earlier_run_and_names_it_for_this_run(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    earlier_folder = tmp_path / "earlier"
    settled(earlier_folder / "step-10.pt", b"x" * 1000)
    settled(earlier_folder / "nested" / "rng.bin", b"r")
    checkpoint_sync(store, earlier_folder, [], objects=EARLIER).sync()
    folder = tmp_path / "checkpoint"
    restored = restore_checkpoint(store, sources=[RUN, EARLIER], objects=RUN,
                                  node_index="single-0", folder=folder)  # fmt: skip
    assert restored is not None
    assert (restored.files, restored.size, restored.run_id) == (2, 1001, "run manual-0")
    assert "from run run manual-0 node single-0 (written " in restored.in_words()
    assert (folder / "step-10.pt").read_bytes() == b"x" * 1000
    assert sorted(p.name for p in folder.rglob("*")) == ["nested", "rng.bin", "step-10.pt"]
    # This run's sync sees the restored files unchanged: nothing uploaded, and when the
    # training replaces one, the earlier run's object stays (its checkpoint is its own).
    sync = checkpoint_sync(store, folder, [])
    assert not sync.sync()
    (folder / "step-10.pt").unlink()
    settled(folder / "step-20.pt", b"y")
    assert sync.sync()
    earlier = read_manifest(store, EARLIER, "single-0")
    assert earlier is not None
    assert store.stat(earlier.files["step-10.pt"].key).size == 1000
    mine = read_manifest(store, RUN, "single-0")
    assert mine is not None and sorted(mine.files) == ["nested/rng.bin", "step-20.pt"]
    assert mine.files["nested/rng.bin"].key.startswith(EARLIER.checkpoints("single-0"))


def test_rank_zero_restores_across_a_change_of_node_count(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    earlier_folder = tmp_path / "earlier"
    settled(earlier_folder / "step-10.pt", b"x")
    CheckpointSync(store, objects=EARLIER, run_id="r0", node_index="distributed-0",
                   folder=earlier_folder, every_seconds=0, note=lambda _: None).sync()  # fmt: skip
    restored = restore_checkpoint(store, sources=[EARLIER], objects=RUN, node_index="single-0",
                                  folder=tmp_path / "checkpoint")  # fmt: skip
    assert restored is not None and restored.node_index == "distributed-0"
    assert restore_checkpoint(store, sources=[EARLIER], objects=RUN, node_index="distributed-1",
                              folder=tmp_path / "other") is None  # fmt: skip


def test_a_corrupt_checkpoint_object_fails_the_restore_and_leaves_no_file(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    earlier_folder = tmp_path / "earlier"
    settled(earlier_folder / "step-10.pt", b"x" * 100)
    checkpoint_sync(store, earlier_folder, [], objects=EARLIER).sync()
    manifest = read_manifest(store, EARLIER, "single-0")
    assert manifest is not None
    stored = store.root / manifest.files["step-10.pt"].key
    stored.chmod(0o644)
    stored.write_bytes(b"y" * 100)
    folder = tmp_path / "checkpoint"
    with pytest.raises(ChecksumMismatch):
        restore_checkpoint(store, sources=[EARLIER], objects=RUN, node_index="single-0",
                           folder=folder)  # fmt: skip
    assert list(folder.iterdir()) == []


def test_the_background_sync_uploads_while_the_training_runs_and_at_its_end(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    folder, notes = tmp_path / "checkpoint", []
    settled(folder / "step-10.pt", b"10")
    background = BackgroundCheckpointSync(checkpoint_sync(store, folder, notes), poll_seconds=0.01)
    background.start()
    deadline = time.monotonic() + 10
    while read_manifest(store, RUN, "single-0") is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert read_manifest(store, RUN, "single-0") is not None
    (folder / "step-20.pt").write_bytes(b"20")  # the last one, just before the end
    background.finish()
    manifest = read_manifest(store, RUN, "single-0")
    assert manifest is not None and sorted(manifest.files) == ["step-10.pt", "step-20.pt"]


def test_the_background_sync_yields_the_cpu_to_the_training_but_not_at_the_end(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    sync = checkpoint_sync(store, tmp_path / "checkpoint", [])
    niceness: dict[bool, int] = {}

    def noted(*, final: bool = False) -> bool:
        niceness[final] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return False

    sync.sync = noted  # type: ignore[method-assign]
    background = BackgroundCheckpointSync(sync, poll_seconds=0.01)
    background.start()
    deadline = time.monotonic() + 10
    while False not in niceness and time.monotonic() < deadline:
        time.sleep(0.01)
    background.finish()
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert niceness == {False: min(19, mine + SYNC_NICENESS), True: mine}
