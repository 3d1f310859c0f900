from pathlib import Path

import pytest

from octotrain.contracts import (
    NodeFolders,
    NodeLogNames,
    node_indices,
    parameter_arguments,
    rank_of,
    training_environment,
)


def test_node_indices_follow_the_manual() -> None:
    assert node_indices(1) == ["single-0"]
    assert node_indices(3) == ["distributed-0", "distributed-1", "distributed-2"]
    with pytest.raises(ValueError, match="at least 1"):
        node_indices(0)
    assert rank_of("distributed-12") == 12
    with pytest.raises(ValueError, match="not a node index"):
        rank_of("../etc")


def test_log_file_names_are_the_products() -> None:
    names = NodeLogNames(task_id=42, node_index="distributed-1")
    assert names.train == "train-42-distributed-1.log"
    assert names.init == "train-42-distributed-1-init.log"
    assert names.sidecar == "train-42-distributed-1-sidecar.log"
    assert names.supplemental == "octopus-train-42-distributed-1-supplemental.logs"


def test_training_environment_has_the_whole_contract_and_platform_names_win(
    tmp_path: Path,
) -> None:
    folders = NodeFolders.under(tmp_path)
    env = training_environment(
        folders=folders,
        task_id=7,
        run_id="manual__1",
        node_index="distributed-1",
        world_size=2,
        master_addr="127.0.0.1",
        master_port=29500,
        algorithm_env={"OUTPUT": "/elsewhere", "LR_SCHEDULE": "cosine"},
        with_model=True,
    )
    assert env["LR_SCHEDULE"] == "cosine"
    assert env["OUTPUT"] == env["TMP_RESULT_PATH"] == str(tmp_path / "output")
    assert env["MODEL"] == env["MODEL_PATH"] == str(tmp_path / "model")
    assert env["DATASET"] == env["DATASET_PATH"] == str(tmp_path / "dataset")
    assert env["MOUNTS"] == str(tmp_path / "mounts")
    assert env["METRICS"] == str(tmp_path / "metrics")
    assert env["CHECKPOINT"] == str(tmp_path / "checkpoint")
    assert (env["TASK_ID"], env["RUN_ID"], env["NODE_INDEX"]) == ("7", "manual__1", "distributed-1")
    assert (env["WORLD_SIZE"], env["RANK"]) == ("2", "1")
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("127.0.0.1", "29500")


def test_a_regular_training_has_no_model_variable_and_no_model_folder(tmp_path: Path) -> None:
    """``${MODEL}`` is incremental training's input models (the manual): a regular training
    gets neither the variable nor an empty folder, whatever its algorithm's variables say."""
    folders = NodeFolders.under(tmp_path)
    folders.create(with_model=False)
    env = training_environment(
        folders=folders, task_id=7, run_id="manual__1", node_index="single-0", world_size=1,
        master_addr="127.0.0.1", master_port=29500, algorithm_env={"MODEL": "/pretend"},
        with_model=False,
    )  # fmt: skip
    assert "MODEL" not in env and "MODEL_PATH" not in env
    assert not folders.model.exists() and folders.output.is_dir()


def test_parameters_become_name_value_arguments_in_declared_order() -> None:
    assert parameter_arguments({"epochs": 3, "lr": 0.1, "amp": True, "opt": "adam"}) == [
        "--epochs=3",
        "--lr=0.1",
        "--amp=true",
        "--opt=adam",
    ]
