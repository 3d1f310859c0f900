"""Benchmark: checkpoints of a training synced while it trains, and restored, against the same
training without sync and against plain copies, in the same run.

A training (a process of its own, as a node's is) alternates a fixed amount of numpy work with
saving a checkpoint file (written to a ``.tmp`` name, then renamed), ``--saves`` times, writing
``--gib`` GiB of checkpoints in all. For each backend (the local folder store; S3, here a real
S3 server: Ceph's radosgw started on 127.0.0.1 by ``tests/radosgw.py``) it measures:

- the training's wall time while ``CheckpointSync`` uploads its checkpoints at most every
  ``--every`` seconds (as the local launcher's node task does; a pod's sidecar runs the same
  code in a container of its own), against the same training without sync. Ratio: with / without
  (goal <= 1.05). The final sync after the training's end is shown apart (it is in the node's
  grace period, not the training's time);
- restoring that checkpoint into an empty folder (``restore_checkpoint``: download, checksum
  verification, rename into place) against ``cp -r`` of the store's folder (local) or boto3's
  transfer manager with the same concurrency and part size (S3). Ratio: baseline time /
  restore time (throughput; goal >= 0.9).

Each figure is the median of ``--repeat`` runs, the two sides taking turns to go first, each
started after flushing written data to disk.

    uv run python -m bench.checkpoint [--gib 1] [--saves 16] [--every 5] [--repeat 3]
        [--backends local,s3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from boto3.s3.transfer import TransferConfig, create_transfer_manager

from bench.staging import CHUNK_MIB, CONCURRENCY, s3_server, timed
from hooks.checkpoint_sync import (
    BackgroundCheckpointSync,
    CheckpointSync,
    read_manifest,
    restore_checkpoint,
)
from hooks.local_store import LocalFolderStore
from hooks.s3_store import S3Store
from octotrain.run_layout import RunObjects
from octotrain.storage import ObjectStore

MIB = 1024 * 1024
GIB = 1024 * MIB
NODE = "single-0"
# A training: argv = folder, saves, bytes per save, matrix products between two saves.
TRAINING = """
import os, sys
import numpy as np
folder, saves, size, products = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
state = os.urandom(size)
matrix = np.random.default_rng(0).random((384, 384))
for step in range(1, saves + 1):
    for _ in range(products):
        matrix = matrix @ matrix
        matrix /= np.abs(matrix).max()
    temporary = os.path.join(folder, f"step-{step}.bin.tmp")
    with open(temporary, "wb") as handle:
        handle.write(state)
    os.replace(temporary, os.path.join(folder, f"step-{step}.bin"))
"""
# (what, seconds, ratio)
Figure = tuple[str, float, float]


def products_for(seconds: float) -> int:
    """How many matrix products take about ``seconds`` here, now: the training's work is then
    a fixed amount, so that any slowing by the sync shows in its wall time."""
    probe = 40
    command = [sys.executable, "-c", TRAINING, tempfile.mkdtemp(prefix="bench-probe-"), "1", "1"]

    def elapsed(products: int) -> float:
        started = time.perf_counter()
        subprocess.run([*command, str(products)], check=True)
        return time.perf_counter() - started

    work = elapsed(probe) - elapsed(0)  # less the process's start
    shutil.rmtree(command[3])
    return max(1, round(probe * seconds / max(work, 1e-3)))


class Bench:
    def __init__(self, root: Path, store: ObjectStore, client: Any, arguments: Any) -> None:
        self.root, self.store, self.client = root, store, client
        self.saves = arguments.saves
        self.size = int(arguments.gib * GIB) // arguments.saves
        self.every = arguments.every
        self.products = products_for(arguments.compute_seconds)
        self.config = TransferConfig(
            multipart_threshold=CHUNK_MIB * MIB,
            multipart_chunksize=CHUNK_MIB * MIB,
            max_concurrency=CONCURRENCY,
        )

    def fresh(self, name: str) -> Path:
        path = self.root / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path

    def train(self, folder: Path) -> None:
        command = [sys.executable, "-c", TRAINING, str(folder), str(self.saves), str(self.size),
                   str(self.products)]  # fmt: skip
        subprocess.run(command, check=True)

    def without_sync(self) -> float:
        return timed(lambda: self.train(self.fresh("checkpoint")))

    def with_sync(self, objects: RunObjects) -> tuple[float, float]:
        """The training's wall time with the sync beside it, and the final sync's."""
        self.store.delete_prefix(objects.prefix)
        folder = self.fresh("checkpoint")
        sync = CheckpointSync(self.store, objects=objects, run_id="bench", node_index=NODE,
                              folder=folder, every_seconds=self.every,
                              note=lambda _: None)  # fmt: skip
        background = BackgroundCheckpointSync(sync)
        background.start()
        training = timed(lambda: self.train(folder))
        final = timed(background.finish)
        return training, final

    def restore(self, objects: RunObjects) -> None:
        restore_checkpoint(self.store, sources=[objects], objects=RunObjects(0, "restored"),
                           node_index=NODE, folder=self.fresh("restored"))  # fmt: skip

    def baseline_restore(self, objects: RunObjects) -> None:
        target = self.fresh("baseline")
        if isinstance(self.store, LocalFolderStore):
            source = self.store.local_path(objects.checkpoints(NODE))
            subprocess.run(["cp", "-r", str(source), str(target / "copy")], check=True)
            return
        assert isinstance(self.store, S3Store)
        manifest = read_manifest(self.store, objects, NODE)
        assert manifest is not None
        with create_transfer_manager(self.client, self.config) as manager:
            bucket, prefix = self.store.bucket, self.store.prefix
            futures = [
                manager.download(bucket, f"{prefix}{version.key}", str(target / relative))
                for relative, version in manifest.files.items()
            ]
            for future in futures:
                future.result()

    def run(self, repeat: int) -> list[Figure]:
        objects = RunObjects(0, "bench")
        plain, synced, finals, restores, baselines = [], [], [], [], []
        for number in range(repeat):
            measures: list[Callable[[], None]] = [
                lambda: plain.append(self.without_sync()),
                lambda: _both(self.with_sync(objects), synced, finals),
            ]
            for measure in measures if number % 2 == 0 else measures[::-1]:
                measure()
            manifest = read_manifest(self.store, objects, NODE)
            assert manifest is not None and len(manifest.files) == self.saves
            restoring = [
                lambda: restores.append(timed(lambda: self.restore(objects))),
                lambda: baselines.append(timed(lambda: self.baseline_restore(objects))),
            ]
            for measure in restoring if number % 2 == 0 else restoring[::-1]:
                measure()
        without, training, final, restore, baseline = (
            statistics.median(x) for x in (plain, synced, finals, restores, baselines)
        )
        return [
            ("training without sync", without, 1.0),
            (f"training with sync every {self.every:g}s", training, training / without),
            ("final sync after the training", final, (training + final) / without),
            ("baseline copy of the checkpoint", baseline, 1.0),
            ("restore_checkpoint", restore, baseline / restore),
        ]


def _both(pair: tuple[float, float], first: list[float], second: list[float]) -> None:
    first.append(pair[0])
    second.append(pair[1])


def run_backend(backend: str, arguments: argparse.Namespace) -> list[Figure]:
    total = int(arguments.gib * GIB)
    server = s3_server(memory_bytes=2 * total + GIB) if backend == "s3" else nullcontext()
    with tempfile.TemporaryDirectory(prefix=f"bench-checkpoint-{backend}-") as scratch:
        root = Path(scratch)
        with server as endpoint:
            if endpoint is not None:
                client = endpoint.client()
                client.create_bucket(Bucket="bench")
                store: ObjectStore = S3Store(client=client, bucket="bench", prefix="o",
                                             concurrency=CONCURRENCY,
                                             multipart_chunk_mib=CHUNK_MIB)  # fmt: skip
            else:
                client, store = None, LocalFolderStore(root / "objects")
            return Bench(root, store, client, arguments).run(arguments.repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="checkpoints written in all")
    parser.add_argument("--saves", type=int, default=16, help="checkpoint files written")
    parser.add_argument("--compute-seconds", type=float, default=1.0, help="work per save")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between syncs")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", default="local,s3")
    arguments = parser.parse_args()
    print(
        f"{arguments.gib:g} GiB of checkpoints in {arguments.saves} files, about "
        f"{arguments.compute_seconds:g}s of work before each; median of {arguments.repeat}; "
        f"concurrency {CONCURRENCY}, parts {CHUNK_MIB} MiB"
    )
    print(f"{'backend':<8}{'measure':<36}{'seconds':>9}{'ratio':>8}")
    for backend in arguments.backends.split(","):
        for label, seconds, ratio in run_backend(backend, arguments):
            print(f"{backend:<8}{label:<36}{seconds:>9.3f}{ratio:>7.2f}x")


if __name__ == "__main__":
    main()
