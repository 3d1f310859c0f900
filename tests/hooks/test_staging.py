"""Staging from either store: parallel, verified, progress in the init log."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import hooks.staging
from hooks.local_store import LocalFolderStore
from hooks.node_cache import NodeCache
from hooks.s3_store import S3Store, s3_store_from_url
from octotrain.storage import ObjectStore
from tests.hooks.test_node_cache import put_version, stage

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
    monkeypatch.setattr(hooks.staging, "PROGRESS_EVERY_SECONDS", 0.0)
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
    assert notes[0].startswith("downloading 11.") and "for 1 input(s)" in notes[0]


def test_small_files_go_to_the_threads_in_batches_and_large_ones_alone() -> None:
    small = [(f"s{n:03}", {"size": 1000}) for n in range(70)]
    large = [(f"l{n}", {"size": 64 * MIB}) for n in range(3)]
    batches = list(hooks.staging._batches(small + large))
    assert [len(batch) for batch in batches] == [32, 32, 6, 1, 1, 1]
    assert [item for batch in batches for item in batch] == small + large
