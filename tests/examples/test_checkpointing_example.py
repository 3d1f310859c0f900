"""The checkpointing example does what its docstring teaches: killed after a checkpoint and
started again with the same CHECKPOINT folder (as Octotrain restores it), it resumes from the
newest checkpoint and ends with exactly the model of a training that was never stopped, keeping
only the newest checkpoints and never a half-written one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from hooks.local.local_process import AGENT_DIR
from octotrain.settings import REPO_ROOT

SCRIPT = REPO_ROOT / "examples" / "checkpointing" / "train.py"
ARGUMENTS = ["--steps=200", "--checkpoint_every=50", "--keep=2", "--step_seconds=0.01"]
DEADLINE_SECONDS = 60


def node_environment(root: Path) -> dict[str, str]:
    """What the launcher gives a node: its folders, identity and the agent on PYTHONPATH."""
    dataset = root / "dataset" / "houses"
    dataset.mkdir(parents=True)
    rng = np.random.default_rng(7)
    features = rng.normal(size=(300, 3))
    target = features @ np.array([1.5, -2.0, 0.5]) + 3 + rng.normal(scale=0.1, size=300)
    table = np.column_stack([features, target])
    np.savetxt(dataset / "train.csv", table, delimiter=",", header="a,b,c,y", comments="")
    env = dict(os.environ, PYTHONPATH=str(AGENT_DIR), RANK="0", WORLD_SIZE="1")
    for name in ("DATASET", "CHECKPOINT", "OUTPUT", "METRICS"):
        (root / name.lower()).mkdir(exist_ok=True)
        env[name] = str(root / name.lower())
    return env


def train(env: dict[str, str]) -> subprocess.Popen[str]:
    command = [sys.executable, str(SCRIPT), *ARGUMENTS]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def finished(process: subprocess.Popen[str]) -> str:
    output, _ = process.communicate(timeout=DEADLINE_SECONDS)
    assert process.returncode == 0, output
    return output


def test_a_killed_training_resumes_from_its_newest_checkpoint_to_the_same_model(
    tmp_path: Path,
) -> None:
    uninterrupted = node_environment(tmp_path / "uninterrupted")
    assert "starting from scratch" in finished(train(uninterrupted))

    interrupted = node_environment(tmp_path / "interrupted")
    checkpoints = Path(interrupted["CHECKPOINT"])
    first = train(interrupted)
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not (checkpoints / "step-100.npz").exists():
        assert time.monotonic() < deadline and first.poll() is None, "no checkpoint at step 100"
        time.sleep(0.01)
    first.kill()  # a lost node: no warning, no last save
    first.wait()
    resumed = finished(train(interrupted))
    assert "resumed from step-" in resumed

    model, expected = (np.load(Path(env["OUTPUT"]) / "rank-0" / "model.npz")
                       for env in (interrupted, uninterrupted))  # fmt: skip
    assert np.array_equal(model["weights"], expected["weights"])
    assert float(model["bias"]) == float(expected["bias"])
    assert sorted(path.name for path in checkpoints.iterdir()) == ["step-150.npz", "step-200.npz"]
