from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException

from hooks.model_archive import lineage_edges
from octotrain.planning import RunPlan
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


def test_lineage_edges_name_every_dataset_version_cache_and_input_model() -> None:
    plan = RunPlan.model_validate(
        {
            "task_id": 1, "task_name": "t", "project": "p", "run_id": "r", "run_key": "r-1",
            "node_indices": ["single-0"], "master_addr": "127.0.0.1", "master_port": 1,
            "image": "i", "command": ["true"], "parameters": {}, "env": {}, "run_as_user": "1000",
            "mounts": [], "output_repository_id": 1, "output_repository": "m", "lineage": {},
            "data_inputs": [
                {"name": "d_v1", "object_prefix": "x", "kind": "dataset", "dataset_version_id": 4},
                {"name": "hot", "object_prefix": "y", "kind": "cache", "dataset_version_id": 4},
            ],
            "input_models": [
                {"name": "m_1", "object_prefix": "z", "kind": "model", "model_version_id": 9}
            ],
        }
    )  # fmt: skip
    edges = [(e.via, e.dataset_version_id, e.input_model_version_id) for e in lineage_edges(plan)]
    assert edges == [("dataset", 4, None), ("cache:hot", 4, None), ("model", None, 9)]
