"""The node cache: downloaded and verified once, reused after a cheap check, shown read-only
as plain folders, bounded with least recently used entries evicted (never one a running run
uses), refusing inputs the disk cannot hold."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hooks.inputs import node_cache
from hooks.inputs.node_cache import DiskTooSmall, NodeCache
from hooks.inputs.staging import StageReport, StageTarget, stage_node
from octotrain.input_sources import StageSource
from octotrain.manifests import content_digest, manifest_of
from octotrain.storage import ChecksumMismatch, ObjectStore
from tests.store_doubles import CopyingStore, CountingStore

GIB = 1024**3
HOLDER = "task-1-run-single-0"


def put_version(
    store: ObjectStore, tmp_path: Path, prefix: str, files: dict[str, bytes]
) -> StageSource:
    """Upload ``files`` as a version under ``prefix``; its source as the catalog would give."""
    written = []
    for relative, data in files.items():
        source = tmp_path / "upload" / prefix / relative
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(data)
        written.append(store.put_file(f"{prefix}/{relative}", source))
    manifest = manifest_of(written, prefix)
    name = prefix.replace("/", "_")
    return StageSource(name, "dataset", prefix, manifest, content_digest(manifest))


def stage(
    store: ObjectStore,
    cache: NodeCache,
    sources: list[StageSource],
    dataset: Path,
    note: Callable[[str], None] = lambda _note: None,
    holder: str = HOLDER,
) -> list[StageReport]:
    return stage_node(store, cache, [StageTarget(dataset, sources)], note, holder=holder)


def test_a_second_stage_reuses_the_verified_copy_without_reading_the_store(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    files = {"a.csv": b"x" * 1000, "b/c.bin": b"y"}
    source = put_version(store, tmp_path, "datasets/p/d/v1", files)
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    notes: list[str] = []
    [first] = stage(store, cache, [source], tmp_path / "run1" / "dataset", notes.append)
    assert (first.reused, store.reads) == (False, 2)
    [second] = stage(store, cache, [source], tmp_path / "run2" / "dataset", notes.append)
    assert (second.reused, store.reads) == (True, 2)
    dataset = tmp_path / "run2" / "dataset"
    assert dataset.is_symlink()
    folder = dataset / source.name
    assert folder.is_dir() and not folder.is_symlink()  # a plain folder: os.walk enters it
    assert sorted(str(p.relative_to(dataset)) for p in dataset.rglob("*.csv")) == [
        f"{source.name}/a.csv"
    ]
    assert (folder / "b" / "c.bin").read_bytes() == b"y"
    assert (folder / "a.csv").stat().st_mode & 0o222 == 0  # a run cannot change the cache
    assert folder.stat().st_mode & 0o222 == 0  # nor add files to it
    assert any("reused the verified copy in the node cache (2 files" in n for n in notes)
    assert any("every file's checksum verified" in n for n in notes)


def test_a_changed_entry_is_downloaded_again(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    source = put_version(store, tmp_path, "datasets/p/d/v1", {"a.csv": b"x" * 100})
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    stage(store, cache, [source], tmp_path / "run1")
    # Same size, new modification time, as a write would leave (the content stays the stored
    # object's, which the entry's file links).
    os.utime(cache.entry_path(source.digest) / "a.csv", ns=(0, 0))
    assert not cache.is_valid(source.digest, source.manifest)
    [report] = stage(store, cache, [source], tmp_path / "run2")
    assert not report.reused
    assert (tmp_path / "run2" / source.name / "a.csv").read_bytes() == b"x" * 100


def test_least_recently_used_entries_are_evicted_to_stay_within_the_bound(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    sources = [
        put_version(store, tmp_path, f"datasets/p/d/v{n}", {"f.bin": bytes([n]) * 400})
        for n in range(3)
    ]
    cache = NodeCache(tmp_path / "cache", max_bytes=1000)
    for number, source in enumerate(sources):
        holder = f"task-1-run{number}-single-0"
        stage(store, cache, [source], tmp_path / f"run{number}", holder=holder)
        os.utime(cache.root / f"{source.digest}.json", (number, number))  # a clear order of use
        cache.unpin(f"task-1-run{number}-")  # the run ended
    assert [entry.digest for entry in cache.entries()] == [s.digest for s in sources[1:]]
    assert not (tmp_path / "run0").resolve().exists()  # its view went with its entry


def test_an_entry_a_running_run_uses_is_not_evicted(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    old, new = (
        put_version(store, tmp_path, f"datasets/p/d/v{n}", {"f.bin": bytes([n]) * 600})
        for n in range(2)
    )
    cache = NodeCache(tmp_path / "cache", max_bytes=1000)
    stage(store, cache, [old], tmp_path / "run0", holder="task-1-run0-single-0")
    with pytest.raises(DiskTooSmall, match="cache bound 1000 B"):
        stage(store, cache, [new], tmp_path / "run1", holder="task-1-run1-single-0")
    assert (tmp_path / "run0" / old.name / "f.bin").read_bytes() == bytes([0]) * 600
    cache.unpin("task-1-run0-")  # run 0 ended: its entry may go
    stage(store, cache, [new], tmp_path / "run1", holder="task-1-run1-single-0")
    assert [entry.digest for entry in cache.entries()] == [new.digest]


def test_inputs_larger_than_the_free_disk_fail_before_any_download(tmp_path: Path) -> None:
    store = CopyingStore(tmp_path / "objects")
    source = put_version(store, tmp_path, "datasets/p/d/v1", {"big.bin": b"b" * 5000})
    small_disk = NodeCache(
        tmp_path / "cache", max_bytes=GIB, free_bytes=lambda _path: 64 * 1024 * 1024 + 100
    )
    with pytest.raises(DiskTooSmall, match=r"need 4\.9 KiB but the node's data disk .* has 100 B"):
        stage(store, small_disk, [source], tmp_path / "run")
    assert store.reads == 0 and not (tmp_path / "run").exists()


def test_inputs_linked_from_a_local_store_need_no_room_on_the_disk(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    source = put_version(store, tmp_path, "datasets/p/d/v1", {"big.bin": b"b" * 5000})
    full_disk = NodeCache(tmp_path / "cache", max_bytes=GIB, free_bytes=lambda _path: 0)
    stage(store, full_disk, [source], tmp_path / "run")
    assert (tmp_path / "run" / source.name / "big.bin").read_bytes() == b"b" * 5000
    # The cache's bound still counts them: it bounds what the cache keeps from eviction.
    bounded = NodeCache(tmp_path / "bounded", max_bytes=4000, free_bytes=lambda _path: 0)
    with pytest.raises(DiskTooSmall, match=r"need 4\.9 KiB but .* keeps 0 B .*cache bound 3\.9"):
        stage(store, bounded, [source], tmp_path / "run2")


def test_a_corrupt_object_fails_the_stage_and_leaves_no_copy(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    source = put_version(store, tmp_path, "datasets/p/d/v1", {"a.bin": b"good", "b.bin": b"ok"})
    stored = store.root / "datasets/p/d/v1/a.bin"
    stored.chmod(0o644)
    stored.write_bytes(b"evil")  # same size, other content
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    with pytest.raises(ChecksumMismatch, match=r"datasets/p/d/v1/a\.bin: its content has checksum"):
        stage(store, cache, [source], tmp_path / "run")
    assert not cache.entry_path(source.digest).exists()
    assert list((cache.root / ".incoming").iterdir()) == []
    assert not (tmp_path / "run").exists()


def test_an_object_changed_in_place_through_its_link_is_refused_when_staged_again(
    tmp_path: Path,
) -> None:
    """A local store's objects are linked into the cache, not copied: a change made through a
    link (write permission given back first) changes the stored object, which the next
    download's checksum finds."""
    store = CountingStore(tmp_path / "objects")
    source = put_version(store, tmp_path, "datasets/p/d/v1", {"a.bin": b"good"})
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    stage(store, cache, [source], tmp_path / "run1")
    linked = cache.entry_path(source.digest) / "a.bin"
    linked.chmod(0o644)
    linked.write_bytes(b"evil")
    linked.chmod(0o444)
    with pytest.raises(ChecksumMismatch, match=r"datasets/p/d/v1/a\.bin: its content has checksum"):
        stage(store, cache, [source], tmp_path / "run2")
    assert not cache.is_valid(source.digest, source.manifest)
    assert list((cache.root / ".incoming").iterdir()) == []
    assert not (tmp_path / "run2").exists()


def test_a_local_store_shares_its_files_with_the_cache_and_keeps_them_at_eviction(
    tmp_path: Path,
) -> None:
    store = CountingStore(tmp_path / "objects")
    source = put_version(store, tmp_path, "datasets/p/d/v1", {"a.bin": b"a", "b/c.bin": b"c"})
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    stage(store, cache, [source], tmp_path / "run")
    for relative in ("a.bin", "b/c.bin"):
        stored = store.root / "datasets/p/d/v1" / relative
        staged = tmp_path / "run" / source.name / relative
        assert staged.stat().st_ino == stored.stat().st_ino
    cache.remove(source.digest)
    stored = store.root / "datasets/p/d/v1/a.bin"
    assert (stored.read_bytes(), stored.stat().st_mode & 0o777) == (b"a", 0o444)


def test_a_view_is_shared_by_runs_with_the_same_inputs_and_made_per_set(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    one, two = (
        put_version(store, tmp_path, f"datasets/p/d/v{n}", {"f.bin": bytes([n])}) for n in (1, 2)
    )
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    stage(store, cache, [one, two], tmp_path / "a")
    stage(store, cache, [one, two], tmp_path / "b")
    stage(store, cache, [one], tmp_path / "c")
    assert (tmp_path / "a").resolve() == (tmp_path / "b").resolve()
    assert (tmp_path / "a").resolve() != (tmp_path / "c").resolve()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted([one.name, two.name])


def test_two_nodes_asking_for_the_same_view_at_once_both_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nodes of a run on one machine stage the same inputs at once (a shared hostPath
    cache). The second asks for the view while the first is making it: it waits and finds it,
    rather than deleting it or failing to move its own into its place."""
    store = CountingStore(tmp_path / "objects")
    one, two = (
        put_version(store, tmp_path, f"datasets/p/d/v{n}", {"f.bin": bytes([n])}) for n in (1, 2)
    )
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    second: list[BaseException | list[StageReport]] = []
    second_waits = threading.Event()
    second_node = threading.Thread(
        target=lambda: second.append(
            _attempt(lambda: stage(store, cache, [one, two], tmp_path / "node-1", holder="n1"))
        )
    )
    real_seal, real_locked = node_cache._seal_folders, NodeCache.locked

    def seal_and_let_the_second_node_in(folder: Path) -> None:
        if folder.name.startswith("view-") and not second_node.is_alive() and not second:
            second_node.start()  # while the first node makes the view
            while second_node.is_alive() and not second_waits.is_set():
                second_node.join(0.01)
        real_seal(folder)

    def locked(self: NodeCache, name: str, *, wait: bool = True) -> Any:
        if threading.current_thread() is second_node and name.startswith("view-"):
            second_waits.set()
        return real_locked(self, name, wait=wait)

    monkeypatch.setattr(node_cache, "_seal_folders", seal_and_let_the_second_node_in)
    monkeypatch.setattr(NodeCache, "locked", locked)

    stage(store, cache, [one, two], tmp_path / "node-0", holder="n0")
    second_node.join()

    assert not isinstance(second[0], BaseException), second[0]
    view = (tmp_path / "node-0").resolve()
    assert (tmp_path / "node-1").resolve() == view
    assert sorted(path.name for path in view.iterdir()) == sorted([one.name, two.name])


def _attempt(action: Callable[[], list[StageReport]]) -> BaseException | list[StageReport]:
    try:
        return action()
    except BaseException as error:  # the test reports it
        return error
