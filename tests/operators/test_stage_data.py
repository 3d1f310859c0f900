from pathlib import Path

import pytest

from hooks.object_store import LocalFolderStore
from octotrain.planning import RunPlan, StagedInput
from octotrain.run_layout import RunLayout
from octotrain.storage import ObjectStoreError
from operators.stage_data import stage_node


def plan(inputs: list[StagedInput], models: list[StagedInput] | None = None) -> RunPlan:
    return RunPlan(
        task_id=3,
        task_name="t",
        project="p",
        run_id="r",
        run_key="r-1",
        node_indices=["single-0"],
        master_addr="127.0.0.1",
        master_port=1,
        image="i",
        command=["true"],
        parameters={},
        env={},
        run_as_user="1000",
        data_inputs=inputs,
        input_models=models or [],
        mounts=[],
        output_repository_id=1,
        output_repository="m",
        lineage={},
    )


def put(store: LocalFolderStore, tmp_path: Path, key: str, text: str) -> None:
    source = tmp_path / "src.txt"
    source.write_text(text)
    store.put_file(key, source)


def test_inputs_and_models_land_where_the_contract_says(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    put(store, tmp_path, "datasets/p/d/v1/a.csv", "x,y")
    put(store, tmp_path, "models/p/m/1/w.bin", "w1")
    put(store, tmp_path, "models/p/m/2/w.bin", "w2")
    layout = RunLayout(tmp_path / "runs", 3, "r-1")
    init_log = tmp_path / "init.log"
    single = [StagedInput(name="m_1", object_prefix="models/p/m/1", kind="model")]
    stage_node(
        store,
        plan([StagedInput(name="d_v1", object_prefix="datasets/p/d/v1", kind="dataset")], single),
        layout,
        "single-0",
        init_log,
    )
    folders = layout.node_folders("single-0")
    assert (folders.dataset / "d_v1" / "a.csv").read_text() == "x,y"
    assert (folders.model / "w.bin").read_text() == "w1"  # one input version: MODEL is it
    assert "staged d_v1: 1 files, 3 bytes" in init_log.read_text()

    several = [*single, StagedInput(name="m_2", object_prefix="models/p/m/2", kind="model")]
    stage_node(
        store, plan([], several), RunLayout(tmp_path / "other", 3, "r-1"), "single-0", init_log
    )
    model = RunLayout(tmp_path / "other", 3, "r-1").node_folders("single-0").model
    assert (model / "m_2" / "w.bin").read_text() == "w2"  # several: one sub-folder each


def test_an_input_with_no_objects_fails_and_says_so_in_the_init_log(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    init_log = tmp_path / "init.log"
    gone = StagedInput(name="d_v2", object_prefix="datasets/p/d/v2", kind="dataset")
    with pytest.raises(ObjectStoreError, match="dataset d_v2 has no files"):
        stage_node(store, plan([gone]), RunLayout(tmp_path, 3, "r-1"), "single-0", init_log)
    assert "ERROR dataset d_v2 has no files at datasets/p/d/v2/" in init_log.read_text()
