"""The local launcher: where its nodes meet, where its abort flag is, and the nodes' OUTPUT
folders merged from the run folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from hooks.local.local_launcher import LOCAL_MASTER_ADDR, LocalLauncher, merged_outputs
from hooks.runs.model_archive import ArchiveFailed
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_files import FolderRunFiles
from octotrain.abort_flags import AbortFlag
from octotrain.planning import RunPlan
from octotrain.run_layout import RunLayout


def write(layout: RunLayout, node: str, relative: str, content: str) -> None:
    path = layout.node_folders(node).output / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)


def test_outputs_of_all_nodes_are_merged(tmp_path: Path) -> None:
    layout = RunLayout(tmp_path, 1, "r")
    write(layout, "distributed-0", "model.json", "{}")
    write(layout, "distributed-0", "rank-0/w.npz", "a")
    write(layout, "distributed-1", "rank-1/w.npz", "b")
    write(layout, "distributed-1", "model.json", "{}")  # identical: merged
    files = merged_outputs(layout, ["distributed-0", "distributed-1"])
    assert sorted(files) == ["model.json", "rank-0/w.npz", "rank-1/w.npz"]


def test_conflicting_outputs_are_an_error_naming_the_file(tmp_path: Path) -> None:
    layout = RunLayout(tmp_path, 1, "r")
    write(layout, "distributed-0", "model.pt", "rank 0")
    write(layout, "distributed-1", "model.pt", "rank 1")
    with pytest.raises(ArchiveFailed, match=r"OUTPUT/model\.pt"):
        merged_outputs(layout, ["distributed-0", "distributed-1"])


def test_nodes_meet_on_this_machine_and_share_the_run_folders_flag(tmp_path: Path) -> None:
    launcher, layout = LocalLauncher(), RunLayout(tmp_path, 1, "r")
    plan = RunPlan.model_validate({
        "task_id": 1, "task_name": "t", "project": "demo", "run_id": "manual__r",
        "run_key": "r", "node_indices": ["single-0"], "master_addr": "", "master_port": 0,
        "image": "i", "command": ["true"], "parameters": {}, "env": {}, "run_as_user": "1000",
        "data_inputs": [], "input_models": [], "mounts": [], "output_repository_id": 1,
        "output_repository": "m", "lineage": {},
    })  # fmt: skip
    address, port = launcher.rendezvous(plan)
    assert address == LOCAL_MASTER_ADDR and 1024 <= port <= 65535
    marker = RunAbortMarker(launcher.run_files(layout))
    marker.raise_flag(AbortFlag.stopped_by("alice"))
    flag = RunAbortMarker(FolderRunFiles(layout)).flag()
    assert flag is not None and flag.stopped
