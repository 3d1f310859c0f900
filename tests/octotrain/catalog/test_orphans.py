"""Orphan objects: only prefixes no row points to, and only once older than the grace."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

from sqlalchemy.orm import Session

from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.orphans import orphan_prefixes, version_prefix_of


def test_version_prefixes_follow_the_layout() -> None:
    assert version_prefix_of("datasets/p/d/v1/sub/a.csv") == "datasets/p/d/v1"
    assert version_prefix_of("caches/p/c/0123abcd/a.csv") == "caches/p/c/0123abcd"
    assert version_prefix_of("models/p/r/3/w.bin") == "models/p/r/3"
    assert version_prefix_of("models/p/r/runs/manual-1/w.bin") == "models/p/r/runs/manual-1"
    assert version_prefix_of("algorithms/1/2/code/v3/lib/a.py") == "algorithms/1/2/code/v3"


def test_only_old_unreferenced_prefixes_are_orphans(
    rule_session: Session, rule_store: LocalFolderStore, tmp_path: Path
) -> None:
    source = tmp_path / "w.bin"
    source.write_bytes(b"w")
    rule_store.put_file("models/demo/house-price-model/runs/died/w.bin", source)
    rule_store.put_file("datasets/demo/many/v99/a.csv", source)
    rule_store.put_file("algorithms/1/999/code/v1/train.py", source)  # an upload that died
    later = time.time() + 2 * 86400
    assert orphan_prefixes(rule_session, rule_store, older_than=timedelta(days=1)) == []
    # the demo's algorithms' code is referenced: never an orphan
    assert orphan_prefixes(rule_session, rule_store, older_than=timedelta(days=1), now=later) == [
        "algorithms/1/999/code/v1",
        "datasets/demo/many/v99",
        "models/demo/house-price-model/runs/died",
    ]
