"""Small JSON documents and log files of a run in the object store (what a pod's sidecar
leaves: its exit status, its OUTPUT manifest, resource samples)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from octotrain.storage import ObjectNotFound, ObjectStore
from octotrain.supplemental_log import last_sampled_memory


def read_text(store: ObjectStore, key: str) -> str | None:
    with tempfile.TemporaryDirectory(prefix="octotrain-run-file-") as scratch:
        path = Path(scratch) / "file"
        try:
            store.get_file(key, path)
        except ObjectNotFound:
            return None
        return path.read_text(encoding="utf-8", errors="replace")


def read_json(store: ObjectStore, key: str) -> Any:
    text = read_text(store, key)
    return None if text is None else json.loads(text)


def write_text(store: ObjectStore, key: str, text: str) -> None:
    with tempfile.TemporaryDirectory(prefix="octotrain-run-file-") as scratch:
        path = Path(scratch) / "file"
        path.write_text(text, encoding="utf-8")
        store.put_file(key, path)


def last_memory_sample(store: ObjectStore, key: str) -> int | None:
    """The memory (bytes) of the last resource sample in ``key``, if any."""
    return last_sampled_memory(read_text(store, key) or "")
