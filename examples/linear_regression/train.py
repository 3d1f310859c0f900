"""Data-parallel linear regression with numpy: a small, real algorithm for Octotrain.

Each node (RANK of WORLD_SIZE) trains on its own shard of every CSV file found under
$DATASET (last column = target) with mini-batch gradient descent, logs metrics per the METRICS
contract, and writes its weights to $OUTPUT/rank-<RANK>/weights.npz; rank 0 also writes
$OUTPUT/model.json, which says that the model is the sample-weighted average of the ranks'
weights (see predict.py). With --init-from-model the run starts from $MODEL (incremental).

Parameters arrive as --name=value: --epochs, --learning_rate, --batch_size, --seed.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from octotrain_metrics import MetricsWriter


def load_shard(dataset: Path, rank: int, world_size: int) -> tuple[np.ndarray, np.ndarray]:
    files = sorted(dataset.rglob("*.csv"))
    if not files:
        raise SystemExit(f"no CSV files under DATASET={dataset}")
    table = np.vstack([np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2) for path in files])
    shard = table[rank::world_size]
    print(f"rank {rank}/{world_size}: {len(shard)} of {len(table)} rows from {len(files)} files")
    return shard[:, :-1], shard[:, -1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--learning_rate", type=float, default=0.05)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    features, target = load_shard(Path(os.environ["DATASET"]), rank, world_size)
    mean, scale = features.mean(axis=0), features.std(axis=0) + 1e-12
    normalized = (features - mean) / scale
    rng = np.random.default_rng(args.seed + rank)
    weights, bias = np.zeros(features.shape[1]), float(target.mean())

    metrics = MetricsWriter()
    metrics.declare("loss", x="step", ys=["mse"], description="training-loss", smooth=True)
    # total: the run's pages show how far the training is and when it should end
    metrics.declare(
        "fit", x="epoch", ys=["mse", "r2"], description="epoch-loss-and-R2", total=args.epochs
    )
    step = 0
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(len(target))
        for start in range(0, len(order), args.batch_size):
            batch = order[start : start + args.batch_size]
            error = normalized[batch] @ weights + bias - target[batch]
            weights -= args.learning_rate * 2 * normalized[batch].T @ error / len(batch)
            bias -= args.learning_rate * 2 * float(error.mean())
            step += 1
            if step % 10 == 0:
                metrics.log("loss", step=step, mse=float(np.mean(error**2)))
        residual = normalized @ weights + bias - target
        mse = float(np.mean(residual**2))
        r2 = 1.0 - mse / float(np.var(target))
        metrics.log("fit", epoch=epoch, mse=mse, r2=r2)
        if epoch % max(1, args.epochs // 10) == 0:
            print(f"epoch {epoch}: mse={mse:.4f} r2={r2:.4f}", flush=True)
        time.sleep(0.005)

    output = Path(os.environ["OUTPUT"])
    shard_dir = output / f"rank-{rank}"
    shard_dir.mkdir(parents=True, exist_ok=True)
    # Weights in the original feature scale, so predict.py needs no normalisation.
    np.savez(
        shard_dir / "weights.npz",
        weights=weights / scale,
        bias=bias - float((weights / scale) @ mean),
        samples=len(target),
    )
    if rank == 0:
        (output / "model.json").write_text(
            json.dumps(
                {
                    "kind": "linear-regression",
                    "combine": "sample-weighted average of rank-*/weights.npz",
                    "world_size": world_size,
                    "parameters": vars(args),
                },
                indent=2,
            )
        )
    print(f"rank {rank}: final mse={mse:.4f} r2={r2:.4f}; weights written to {shard_dir}")


if __name__ == "__main__":
    main()
