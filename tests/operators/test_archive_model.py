from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException

from octotrain.run_layout import RunLayout
from operators.archive_model import merged_outputs


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
    with pytest.raises(AirflowFailException, match=r"OUTPUT/model\.pt"):
        merged_outputs(layout, ["distributed-0", "distributed-1"])
