"""A pod's sidecar keeps the wrapper's hang report in the store while the training looks hung,
and empties it there once the training advances again (the launch task reads it there)."""

from __future__ import annotations

import json
from pathlib import Path

from hooks.kubernetes.pod_node import NodeSync
from hooks.storage.local_store import LocalFolderStore
from octotrain.hang_detection import HANG_REPORT_FILE, HungNode
from octotrain.run_layout import RunObjects
from tests.hooks.kubernetes.test_pod_node import PREFIX, SIDECAR, store, work_folder
from tests.stored_run_files import stored_json

__all__ = ["store"]  # the fixture, shared with the sidecar's other tests

NODE = "distributed-0"


def test_the_hang_report_is_in_the_store_while_the_training_looks_hung(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    work = work_folder(tmp_path)
    sidecar = NodeSync(store, prefix=PREFIX, task_id=7, node_index=NODE, work=work, **SIDECAR)
    key = RunObjects.from_prefix(PREFIX).hang_report(NODE)
    sidecar.sync()
    assert stored_json(store, key) is None
    report = {"silent_seconds": 61.0, "hang_after_seconds": 60}
    (work / HANG_REPORT_FILE).write_text(json.dumps(report))
    sidecar.sync()
    assert stored_json(store, key) == report
    (work / HANG_REPORT_FILE).unlink()  # the training advanced again
    sidecar.sync()
    assert HungNode.from_json(stored_json(store, key)) is None
    (work / HANG_REPORT_FILE).write_text(json.dumps(report))  # hung again
    sidecar.sync()
    assert HungNode.from_json(stored_json(store, key)) == HungNode(61.0, 60)
