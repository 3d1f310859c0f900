"""The node cache: downloaded and verified once, reused after a cheap check, linked read-only,
bounded with least recently used entries evicted, refusing inputs the disk cannot hold."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hooks.node_cache import DiskTooSmall, NodeCache, link_tree
from hooks.staging import stage_node
from octotrain.input_sources import StageSource
from octotrain.manifests import content_digest, manifest_of
from octotrain.storage import ChecksumMismatch, ObjectStore
from tests.store_doubles import CountingStore

GIB = 1024**3


def put_version(
    store: ObjectStore, tmp_path: Path, prefix: str, files: dict[str, bytes]
) -> StageSource:
    written = []
    for relative, data in files.items():
        source = tmp_path / "upload" / relative
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(data)
        written.append(store.put_file(f"{prefix}/{relative}", source))
    manifest = manifest_of(written, prefix)
    name = prefix.replace("/", "_")
    return StageSource(name, "dataset", prefix, manifest, content_digest(manifest))


def test_a_second_stage_reuses_the_verified_copy_without_reading_the_store(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    source = put_version(
        store, tmp_path, "datasets/p/d/v1", {"a.csv": b"x" * 1000, "b/c.bin": b"y"}
    )
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    notes: list[str] = []
    first = stage_node(store, cache, [(source, tmp_path / "run1" / "d_v1")], notes.append)
    assert (first[0].reused, store.reads) == (False, 2)
    second = stage_node(store, cache, [(source, tmp_path / "run2" / "d_v1")], notes.append)
    assert (second[0].reused, store.reads) == (True, 2)
    linked = tmp_path / "run2" / "d_v1" / "a.csv"
    assert linked.read_bytes() == b"x" * 1000
    assert linked.stat().st_ino == (cache.entry_path(source.digest) / "a.csv").stat().st_ino
    assert linked.stat().st_mode & 0o222 == 0  # read-only: a run cannot change the cache
    assert any("reused the verified copy in the node cache (2 files" in n for n in notes)
    assert any("every file's SHA-256 verified" in n for n in notes)


def test_a_changed_entry_is_downloaded_again(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    source = put_version(store, tmp_path, "datasets/p/d/v1", {"a.csv": b"x" * 100})
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    stage_node(store, cache, [(source, tmp_path / "run1")], print)
    cached = cache.entry_path(source.digest) / "a.csv"
    cached.chmod(0o644)
    cached.write_bytes(b"z" * 100)  # same size, new modification time
    assert not cache.is_valid(source.digest, source.manifest)
    [report] = stage_node(store, cache, [(source, tmp_path / "run2")], print)
    assert not report.reused and (tmp_path / "run2" / "a.csv").read_bytes() == b"x" * 100


def test_least_recently_used_entries_are_evicted_to_stay_within_the_bound(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    sources = [
        put_version(store, tmp_path, f"datasets/p/d/v{n}", {"f.bin": bytes([n]) * 400})
        for n in range(3)
    ]
    cache = NodeCache(tmp_path / "cache", max_bytes=1000)
    for number, source in enumerate(sources):
        stage_node(store, cache, [(source, tmp_path / f"run{number}")], print)
        os.utime(cache.root / f"{source.digest}.json", (number, number))  # a clear order of use
    assert [entry.digest for entry in cache.entries()] == [s.digest for s in sources[1:]]
    # the run that used the evicted entry keeps its data (a link outlives the entry)
    assert (tmp_path / "run0" / "f.bin").read_bytes() == bytes([0]) * 400


def test_an_entry_in_use_is_not_evicted(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    old, new = (
        put_version(store, tmp_path, f"datasets/p/d/v{n}", {"f.bin": bytes([n]) * 600})
        for n in range(2)
    )
    cache = NodeCache(tmp_path / "cache", max_bytes=1000)
    stage_node(store, cache, [(old, tmp_path / "run0")], print)
    with cache.locked(old.digest), pytest.raises(DiskTooSmall, match="cache bound 1000 B"):
        stage_node(store, cache, [(new, tmp_path / "run1")], print)
    assert cache.is_valid(old.digest, old.manifest)


def test_inputs_larger_than_the_free_disk_fail_before_any_download(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    source = put_version(store, tmp_path, "datasets/p/d/v1", {"big.bin": b"b" * 5000})
    small_disk = NodeCache(
        tmp_path / "cache", max_bytes=GIB, free_bytes=lambda _path: 64 * 1024 * 1024 + 100
    )
    with pytest.raises(DiskTooSmall, match=r"need 4\.9 KiB but the node's data disk .* has 100 B"):
        stage_node(store, small_disk, [(source, tmp_path / "run")], print)
    assert store.reads == 0 and not (tmp_path / "run").exists()


def test_a_corrupt_object_fails_the_stage_and_leaves_no_copy(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "objects")
    source = put_version(store, tmp_path, "datasets/p/d/v1", {"a.bin": b"good", "b.bin": b"ok"})
    stored = store.root / "datasets/p/d/v1/a.bin"
    stored.chmod(0o644)
    stored.write_bytes(b"evil")  # same size, other content
    cache = NodeCache(tmp_path / "cache", max_bytes=GIB)
    with pytest.raises(ChecksumMismatch, match=r"datasets/p/d/v1/a\.bin: its content has SHA-256"):
        stage_node(store, cache, [(source, tmp_path / "run")], print)
    assert not cache.entry_path(source.digest).exists()
    assert list((cache.root / ".incoming").iterdir()) == []
    assert not (tmp_path / "run").exists()


def test_links_become_copies_across_file_systems(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    (entry / "x").mkdir(parents=True)
    (entry / "x" / "f").write_text("data")
    link_tree(entry, {"x/f": {"size": 4, "sha256": ""}}, tmp_path / "target")
    assert (tmp_path / "target" / "x" / "f").read_text() == "data"
