"""Linear regression that survives being stopped: how a training uses Octotrain's CHECKPOINT.

The loop is the one a PyTorch user writes, with numpy standing in for torch so that it runs
anywhere (the torch line is beside each numpy one):

- at start, resume from the newest checkpoint in $CHECKPOINT if there is one (Octotrain put
  it there: this run's own, when the node is started again, or the one of the run this run
  resumes); otherwise start from scratch;
- every --checkpoint_every steps, save everything the rest of the training depends on (the
  weights, the optimizer's state, the step, the random generator's state) to a temporary name
  and rename it into place: Octotrain never syncs a ``.tmp`` name, and a rename is atomic, so
  the synced ``step-<N>.npz`` is always whole;
- keep the newest --keep checkpoints and delete the older ones (the object store follows).

Because the random generator's state is in the checkpoint, a training stopped at any step and
resumed ends with exactly the weights and metrics of one that was never stopped.

Data: every CSV under $DATASET (last column = target), the rows of this node's RANK. The model
($OUTPUT/model.npz) is written at the end. Parameters (--name=value): --steps,
--checkpoint_every, --keep, --learning_rate, --momentum, --batch_size, --seed and
--step_seconds (time each step takes on top of its work, to watch a long training).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
from octotrain_metrics import MetricsWriter

CHECKPOINT_NAME = re.compile(r"step-(\d+)\.npz")


def load_shard(dataset: Path, rank: int, world_size: int) -> tuple[np.ndarray, np.ndarray]:
    files = sorted(dataset.rglob("*.csv"))
    if not files:
        raise SystemExit(f"no CSV files under DATASET={dataset}")
    table = np.vstack([np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2) for path in files])
    shard = table[rank::world_size]
    features = shard[:, :-1]
    normalized = (features - features.mean(axis=0)) / (features.std(axis=0) + 1e-12)
    return normalized, shard[:, -1]


def newest_checkpoint(folder: Path) -> Path | None:
    """The checkpoint with the highest step (names that are not ``step-<N>.npz`` are not ours:
    a half-written ``.tmp`` left by a kill, for instance)."""
    steps = {
        int(match.group(1)): path
        for path in folder.iterdir()
        if (match := CHECKPOINT_NAME.fullmatch(path.name))
    }
    return steps[max(steps)] if steps else None


def save_checkpoint(folder: Path, step: int, state: dict[str, Any], *, keep: int) -> Path:
    """Write ``state`` as ``step-<step>.npz`` atomically, then drop all but the newest ``keep``."""
    final = folder / f"step-{step}.npz"
    temporary = folder / f"step-{step}.npz.tmp"
    with temporary.open("wb") as handle:  # torch.save(state, temporary)
        np.savez(handle, **state)
    os.replace(temporary, final)
    saved = sorted(
        (int(match.group(1)), path)
        for path in folder.iterdir()
        if (match := CHECKPOINT_NAME.fullmatch(path.name))
    )
    for _, old in saved[:-keep]:
        old.unlink()
    return final


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--checkpoint_every", type=int, default=50)
    parser.add_argument("--keep", type=int, default=2)
    parser.add_argument("--learning_rate", type=float, default=0.02)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--step_seconds", type=float, default=0.0)
    args = parser.parse_args()

    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    features, target = load_shard(Path(os.environ["DATASET"]), rank, world_size)
    checkpoints = Path(os.environ["CHECKPOINT"])

    # model = Model(); optimizer = SGD(model.parameters(), momentum=...)
    weights, bias = np.zeros(features.shape[1]), float(target.mean())
    velocity_w, velocity_b = np.zeros_like(weights), 0.0
    rng = np.random.default_rng(args.seed + rank)
    step = 0
    newest = newest_checkpoint(checkpoints)
    if newest is not None:
        # state = torch.load(newest); model.load_state_dict(state["model"]); ...
        with np.load(newest) as state:
            weights, bias = state["weights"], float(state["bias"])
            velocity_w, velocity_b = state["velocity_w"], float(state["velocity_b"])
            step = int(state["step"])
            rng.bit_generator.state = json.loads(str(state["rng"]))
        print(f"rank {rank}: resumed from {newest.name} at step {step}", flush=True)
    else:
        print(f"rank {rank}: no checkpoint in {checkpoints}; starting from scratch", flush=True)

    metrics = MetricsWriter()
    metrics.declare("loss", x="step", ys=["mse"], description="training-loss", smooth=True)
    while step < args.steps:
        batch = rng.integers(0, len(target), size=args.batch_size)
        error = features[batch] @ weights + bias - target[batch]
        # loss.backward(); optimizer.step()
        velocity_w = args.momentum * velocity_w + 2 * features[batch].T @ error / len(batch)
        velocity_b = args.momentum * velocity_b + 2 * float(error.mean())
        weights = weights - args.learning_rate * velocity_w
        bias -= args.learning_rate * velocity_b
        step += 1
        if args.step_seconds:
            time.sleep(args.step_seconds)
        if step % 10 == 0:
            metrics.log("loss", step=step, mse=float(np.mean(error**2)))
        if step % args.checkpoint_every == 0 or step == args.steps:
            state = {
                "weights": weights, "bias": bias, "velocity_w": velocity_w,
                "velocity_b": velocity_b, "step": step,
                "rng": json.dumps(rng.bit_generator.state),
            }  # fmt: skip
            saved = save_checkpoint(checkpoints, step, state, keep=args.keep)
            print(f"rank {rank}: step {step}: saved {saved.name}", flush=True)

    mse = float(np.mean((features @ weights + bias - target) ** 2))
    output = Path(os.environ["OUTPUT"]) / f"rank-{rank}"
    output.mkdir(parents=True, exist_ok=True)
    np.savez(output / "model.npz", weights=weights, bias=bias)
    print(f"rank {rank}: final mse={mse:.6f} after {step} steps", flush=True)


if __name__ == "__main__":
    main()
