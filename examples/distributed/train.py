"""Data-parallel linear regression whose nodes meet as PyTorch's DistributedDataParallel's do.

NumPy stands in for torch (the torch line is beside each stand-in), so that it runs anywhere:

- the rendezvous reads what torch's ``env://`` reads, from the environment contract: rank 0
  listens on MASTER_PORT, every other RANK of WORLD_SIZE connects to MASTER_ADDR:MASTER_PORT
  (``dist.init_process_group(init_method="env://")``);
- rank 0's weights are sent to every rank before the first step, as DDP broadcasts rank 0's
  parameters when it wraps the model; rank 0 has them from its checkpoint, if there is one;
- each step, every rank computes the gradient of its shard of the CSV files under $DATASET
  (last column = target), the ranks average it (an all-reduce, through rank 0) and every rank
  takes the same step: the model is the one a single node would train on all the rows.

Every rank logs the loss to $METRICS (the chart ``loss``; ``total`` makes the run's pages show
its progress). Rank 0 saves $CHECKPOINT/state.npz every --checkpoint_every epochs (written to a
``.tmp`` name, which Octotrain never syncs, then renamed) and writes $OUTPUT/model.npz.

Parameters (--name=value): --epochs, --learning_rate, --checkpoint_every.
"""

from __future__ import annotations

import argparse
import os
import socket
import time
from pathlib import Path

import numpy as np
from octotrain_metrics import MetricsWriter

RENDEZVOUS_TIMEOUT_SECONDS = 600


class ProcessGroup:
    """The run's ranks, connected: rank 0 holds a socket to every other rank."""

    def __init__(self, rank: int, world_size: int, address: str, port: int) -> None:
        self.rank, self.world_size = rank, world_size
        self.peers: list[socket.socket] = []
        if world_size == 1:
            return
        if rank == 0:
            with socket.create_server(("", port)) as server:
                server.settimeout(RENDEZVOUS_TIMEOUT_SECONDS)
                joined: dict[int, socket.socket] = {}
                while len(joined) < world_size - 1:
                    peer, _ = server.accept()
                    peer.settimeout(None)
                    joined[int(_receive(peer, 1)[0])] = peer
            self.peers = [joined[other] for other in sorted(joined)]  # a fixed order of sums
            return
        deadline = time.monotonic() + RENDEZVOUS_TIMEOUT_SECONDS
        while True:  # rank 0 may not listen yet
            try:
                peer = socket.create_connection((address, port), timeout=10)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        peer.settimeout(None)
        peer.sendall(np.array([rank], dtype=np.float64).tobytes())
        self.peers = [peer]

    def all_reduce_sum(self, values: np.ndarray) -> np.ndarray:
        """The sum over the ranks of ``values`` (the same shape on every rank)."""
        # dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        total = np.ascontiguousarray(values, dtype=np.float64)
        if self.rank == 0:
            for peer in self.peers:
                total = total + _receive(peer, total.size)
            for peer in self.peers:
                peer.sendall(total.tobytes())
            return total
        self.peers[0].sendall(total.tobytes())
        return _receive(self.peers[0], total.size)

    def broadcast(self, values: np.ndarray) -> np.ndarray:
        """Rank 0's ``values`` on every rank."""
        # dist.broadcast(tensor, src=0)
        if self.rank == 0:
            data = np.ascontiguousarray(values, dtype=np.float64)
            for peer in self.peers:
                peer.sendall(data.tobytes())
            return data
        return _receive(self.peers[0], values.size)

    def close(self) -> None:
        # dist.destroy_process_group()
        for peer in self.peers:
            peer.close()


def _receive(peer: socket.socket, count: int) -> np.ndarray:
    buffer = bytearray(8 * count)
    view, received = memoryview(buffer), 0
    while received < len(buffer):
        got = peer.recv_into(view[received:])
        if not got:
            raise ConnectionError("a rank closed its connection: it failed or was stopped")
        received += got
    return np.frombuffer(buffer, dtype=np.float64)


def load_shard(dataset: Path, rank: int, world_size: int) -> tuple[np.ndarray, np.ndarray]:
    """This rank's rows (``DistributedSampler(dataset, world_size, rank)``), with a bias column."""
    files = sorted(dataset.rglob("*.csv"))
    if not files:
        raise SystemExit(f"no CSV files under DATASET={dataset}")
    table = np.vstack([np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2) for path in files])
    shard = table[rank::world_size]
    return np.column_stack([shard[:, :-1], np.ones(len(shard))]), shard[:, -1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--learning_rate", type=float, default=0.1)
    parser.add_argument("--checkpoint_every", type=int, default=10)
    args = parser.parse_args()

    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    group = ProcessGroup(
        rank, world_size, os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    )
    features, target = load_shard(Path(os.environ["DATASET"]), rank, world_size)
    checkpoint = Path(os.environ["CHECKPOINT"]) / "state.npz"

    # Rank 0's starting point for all: epoch 0 and zeros, or its checkpoint's.
    start = np.zeros(1 + features.shape[1])
    if rank == 0 and checkpoint.exists():
        saved = np.load(checkpoint)
        start = np.concatenate([[saved["epoch"]], saved["weights"]])
        print(f"resumed from {checkpoint} at epoch {int(saved['epoch'])}", flush=True)
    start = group.broadcast(start)
    first_epoch, weights = int(start[0]) + 1, start[1:].copy()

    metrics = MetricsWriter()
    metrics.declare("loss", x="epoch", ys=["mse"], description="training-loss", total=args.epochs)
    for epoch in range(first_epoch, args.epochs + 1):
        error = features @ weights - target
        # Each rank's sums; their sums over the ranks are those of all the rows.
        local = np.concatenate([2 * features.T @ error, [error @ error, len(target)]])
        summed = group.all_reduce_sum(local)
        rows = summed[-1]
        weights -= args.learning_rate * summed[:-2] / rows  # optimizer.step()
        mse = float(summed[-2] / rows)
        metrics.log("loss", epoch=epoch, mse=mse)
        if epoch % 10 == 0 or epoch == args.epochs:
            print(f"epoch {epoch}: mse={mse:.6f}", flush=True)
        if rank == 0 and epoch % args.checkpoint_every == 0:
            temporary = checkpoint.with_name(checkpoint.name + ".tmp")
            with temporary.open("wb") as handle:  # torch.save(state, temporary)
                np.savez(handle, epoch=epoch, weights=weights)
            os.replace(temporary, checkpoint)

    if rank == 0:
        output = Path(os.environ["OUTPUT"]) / "model.npz"
        np.savez(output, weights=weights[:-1], bias=weights[-1])
        print(f"rank 0 of {world_size}: model written to {output}", flush=True)
    group.close()


if __name__ == "__main__":
    main()
