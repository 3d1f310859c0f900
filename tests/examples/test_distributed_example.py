"""The distributed example (docs/how-to/write-an-algorithm.md) does what its docstring says: its
ranks meet on MASTER_ADDR:MASTER_PORT, average their gradients and so train the model that one
node trains on all the rows, declare a valid chart, and resume from rank 0's checkpoint."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np

from hooks.local.local_process import AGENT_DIR
from octotrain.metrics_meta import parse_meta
from octotrain.settings import REPO_ROOT

SCRIPT = REPO_ROOT / "examples" / "distributed" / "train.py"
DEADLINE_SECONDS = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_dataset(folder: Path) -> Path:
    folder.mkdir(parents=True)
    rng = np.random.default_rng(3)
    features = rng.normal(size=(301, 3))
    target = features @ np.array([1.5, -2.0, 0.5]) + 3 + rng.normal(scale=0.1, size=301)
    table = np.column_stack([features, target])
    np.savetxt(folder / "train.csv", table, delimiter=",", header="a,b,c,y", comments="")
    return folder


def train(root: Path, dataset: Path, world_size: int, *arguments: str) -> list[Path]:
    """Run every rank as the launcher would; each rank's node folder."""
    port = str(free_port())
    nodes, processes = [], []
    for rank in range(world_size):
        node = root / f"rank-{rank}"
        env = dict(os.environ, PYTHONPATH=str(AGENT_DIR), RANK=str(rank),
                   WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   DATASET=str(dataset))  # fmt: skip
        for name in ("OUTPUT", "METRICS", "CHECKPOINT"):
            (node / name.lower()).mkdir(parents=True, exist_ok=True)
            env[name] = str(node / name.lower())
        command = [sys.executable, str(SCRIPT), *arguments]
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))  # fmt: skip
        nodes.append(node)
    for process in processes:
        output, _ = process.communicate(timeout=DEADLINE_SECONDS)
        assert process.returncode == 0, output
    return nodes


def model(node: Path) -> np.ndarray:
    saved = np.load(node / "output" / "model.npz")
    return np.append(saved["weights"], saved["bias"])


def test_three_ranks_train_the_model_of_one_node_on_all_rows(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "dataset" / "houses_v1")
    (single,) = train(tmp_path / "single", dataset, 1, "--epochs=60")
    ranks = train(tmp_path / "distributed", dataset, 3, "--epochs=60")

    assert np.allclose(model(ranks[0]), model(single), rtol=1e-9, atol=1e-12)
    assert np.allclose(model(single), [1.5, -2.0, 0.5, 3.0], atol=0.05)
    assert [list((node / "output").iterdir()) for node in ranks[1:]] == [[], []]  # rank 0 only
    meta = parse_meta((ranks[1] / "metrics" / "metrics.json").read_text())
    assert not meta.problems
    assert [(chart.name, chart.x, chart.ys, chart.total) for chart in meta.charts] == [
        ("loss", "epoch", ["mse"], 60.0)
    ]
    losses = [(node / "metrics" / "loss.jsonl").read_text() for node in ranks]
    assert losses[0] == losses[1] == losses[2] and len(losses[0].splitlines()) == 60


def test_a_run_resumes_from_rank_0s_checkpoint(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "dataset" / "houses_v1")
    uninterrupted = train(tmp_path / "uninterrupted", dataset, 2, "--epochs=40")
    train(tmp_path / "resumed", dataset, 2, "--epochs=25", "--checkpoint_every=10")
    resumed = train(tmp_path / "resumed", dataset, 2, "--epochs=40")

    assert sorted(path.name for path in (resumed[0] / "checkpoint").iterdir()) == ["state.npz"]
    assert list((resumed[1] / "checkpoint").iterdir()) == []
    assert np.array_equal(model(resumed[0]), model(uninterrupted[0]))
