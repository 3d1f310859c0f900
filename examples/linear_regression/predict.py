"""Load a model version written by train.py and predict: python predict.py MODEL_DIR CSV."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def load_model(folder: Path) -> tuple[np.ndarray, float]:
    shards = [np.load(path) for path in sorted(folder.glob("rank-*/weights.npz"))]
    if not shards:
        raise SystemExit(f"no rank-*/weights.npz under {folder}")
    samples = np.array([float(shard["samples"]) for shard in shards])
    share = samples / samples.sum()
    weights = sum(s * shard["weights"] for s, shard in zip(share, shards, strict=True))
    bias = float(sum(s * float(shard["bias"]) for s, shard in zip(share, shards, strict=True)))
    return np.asarray(weights), bias


def main() -> None:
    weights, bias = load_model(Path(sys.argv[1]))
    table = np.loadtxt(sys.argv[2], delimiter=",", skiprows=1, ndmin=2)
    prediction = table[:, : len(weights)] @ weights + bias
    for value in prediction:
        print(f"{value:.4f}")


if __name__ == "__main__":
    main()
