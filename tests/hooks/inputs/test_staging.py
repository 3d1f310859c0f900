"""Staging from either store: parallel, verified, progress in the init log."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

import hooks.inputs.staging
from hooks.inputs.node_cache import NodeCache
from hooks.storage.local_store import LocalFolderStore
from hooks.storage.s3_store import S3Store, s3_store_from_url
from octotrain.storage import ObjectInfo, ObjectStore
from tests.hooks.inputs.test_node_cache import put_version, stage

MIB = 1024 * 1024


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalFolderStore(tmp_path / "objects")
    plain = s3_store_from_url(request.getfixturevalue("s3_bucket"), attempts=2,
                              first_wait_seconds=0.05)  # fmt: skip
    return S3Store(client=plain.client, bucket=plain.bucket, prefix="o", multipart_chunk_mib=5)


def test_many_files_and_a_large_one_are_staged_verified_with_progress(
    store: ObjectStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hooks.inputs.staging, "PROGRESS_EVERY_SECONDS", 0.0)
    files = {f"part-{n:03}.csv": os.urandom(2000) for n in range(40)} | {
        "large.bin": os.urandom(11 * MIB)
    }
    source = put_version(store, tmp_path, "datasets/p/d/v1", files)
    notes: list[str] = []
    cache = NodeCache(tmp_path / "cache", max_bytes=1024 * MIB)
    dataset = tmp_path / "run" / "dataset"
    [report] = stage(store, cache, [source], dataset, notes.append)
    assert (report.files, report.size) == (41, sum(len(data) for data in files.values()))
    for relative, data in files.items():
        assert (dataset / source.name / relative).read_bytes() == data
    progress = [n for n in notes if re.search(r"of 11\.\d MiB \(\d+%\) at .*/s, ETA \d+s", n)]
    assert progress, notes
    fetched = "linking and verifying" if isinstance(store, LocalFolderStore) else "downloading"
    assert notes[0].startswith(f"{fetched} 11.") and "for 1 input(s)" in notes[0]


def test_small_files_go_to_the_threads_in_batches_and_large_ones_alone() -> None:
    small = [(f"s{n:03}", {"size": 1000}) for n in range(70)]
    large = [(f"l{n}", {"size": 64 * MIB}) for n in range(3)]
    batches = list(hooks.inputs.staging._batches(small + large))
    assert [len(batch) for batch in batches] == [32, 32, 6, 1, 1, 1]
    assert [item for batch in batches for item in batch] == small + large


class _OverlapCountingStore(LocalFolderStore):
    """Records how many files are being read at once."""

    def __init__(self, root: Path, *, concurrency: int) -> None:
        super().__init__(root)
        self.concurrency, self.now, self.most = concurrency, 0, 0
        self.lock = threading.Lock()
        self.met = False  # set before the barrier lets its threads go
        self.all_busy = threading.Barrier(
            concurrency, action=lambda: setattr(self, "met", True), timeout=10
        )

    def get_file(self, key: str, destination: Path | str, **options: Any) -> ObjectInfo:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            if not self.met:  # every thread reading at once, once: the bound is reached
                self.all_busy.wait()
            return super().get_file(key, destination, **options)
        finally:
            with self.lock:
                self.now -= 1


@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_store_is_read_as_many_files_at_a_time_as_it_asks(
    tmp_path: Path, concurrency: int
) -> None:
    store = _OverlapCountingStore(tmp_path / "objects", concurrency=concurrency)
    files = {f"part-{n:03}.bin": os.urandom(64) for n in range(4 * 32)}  # 4 batches
    source = put_version(store, tmp_path, "datasets/p/d/v1", files)
    cache = NodeCache(tmp_path / "cache", max_bytes=1024 * MIB)
    stage(store, cache, [source], tmp_path / "run" / "dataset", lambda _note: None)
    assert store.most == concurrency


@pytest.mark.parametrize(("cores", "concurrency"), [(1, 1), (3, 3), (32, 8)])
def test_the_local_store_reads_one_file_per_core_it_may_use_up_to_eight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cores: int, concurrency: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cores)))
    assert LocalFolderStore(tmp_path).concurrency == concurrency
