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
  grace period, not the training's time). Where that time goes is shown in CPU seconds during
  the synced training: the training's, the sync's (this process: hashing and sending, what a
  node pays), and the S3 server's, which here shares the training's two cores (on a cluster it
  runs elsewhere), each as a share of the training's;
- restoring that checkpoint into an empty folder (``restore_checkpoint``: download, checksum
  verification, rename into place) against ``cp -r`` of the store's folder (local) or boto3's
  transfer manager with the same concurrency and part size (S3). Ratio: baseline time /
  restore time (throughput; goal >= 0.9).

Each figure is the median of ``--repeat`` runs, the two sides taking turns to go first, each
started after flushing written data to disk.

Where the CPUs are: in a pod the training has the CPUs of its limit to itself, the sidecar runs
on the node's others (its own request), and the S3 server is elsewhere. So by default the
training (both sides) runs on ``--training-cpus`` CPUs (all but one; its math library told to
use that many threads), and this process, its sync and the S3 server on the rest.
``--training-cpus 0`` shares every CPU among them all instead: on a 2-core machine that
measures how much CPU the local S3 server and the sync take from a training that uses both.

    uv run python -m bench.checkpoint [--gib 1] [--saves 16] [--every 5] [--repeat 3]
        [--backends local,s3] [--training-cpus N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import Any

from boto3.s3.transfer import TransferConfig, create_transfer_manager

from bench.staging import CHUNK_MIB, CONCURRENCY, product_store, s3_server, timed
from hooks.runs.checkpoint_sync import (
    BackgroundCheckpointSync,
    CheckpointSync,
    read_manifest,
    restore_checkpoint,
)
from hooks.storage.local_store import LocalFolderStore
from hooks.storage.s3_store import S3Store
from octotrain.run_layout import RunObjects
from octotrain.storage import ObjectStore
from tests.radosgw import pids_in

MIB = 1024 * 1024
GIB = 1024 * MIB
NODE = "single-0"
# A training: argv = folder, saves, bytes per save, matrix products between two saves.
TRAINING = """
import os, sys
if cpus := os.environ.get("BENCH_TRAINING_CPUS"):
    os.sched_setaffinity(0, {int(cpu) for cpu in cpus.split(",")})
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
# What numpy's math libraries read for their number of threads.
MATH_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
# (what, seconds, ratio)
Figure = tuple[str, float, float]


def training_env(cpus: set[int]) -> dict[str, str]:
    """The training's environment: on ``cpus`` only, with as many math threads (none: every
    CPU, the library's own choice)."""
    if not cpus:
        return dict(os.environ)
    threads = {name: str(len(cpus)) for name in MATH_THREADS}
    return os.environ | threads | {"BENCH_TRAINING_CPUS": ",".join(map(str, sorted(cpus)))}


def split_cpus(training: int) -> set[int]:
    """The CPUs the training gets (the first ``training`` of this process's) and, as a side
    effect, this process (its sync threads, and the S3 server it starts) moved to the others;
    nothing pinned when ``training`` is 0 or leaves no CPU over."""
    available = sorted(os.sched_getaffinity(0))
    if training <= 0 or training >= len(available):
        return set()
    os.sched_setaffinity(0, set(available[training:]))
    return set(available[:training])


def products_for(seconds: float, env: dict[str, str]) -> int:
    """How many matrix products take about ``seconds`` here, now: the training's work is then
    a fixed amount, so that any slowing by the sync shows in its wall time."""
    probe = 40
    command = [sys.executable, "-c", TRAINING, tempfile.mkdtemp(prefix="bench-probe-"), "1", "1"]

    def elapsed(products: int) -> float:
        started = time.perf_counter()
        subprocess.run([*command, str(products)], check=True, env=env)
        return time.perf_counter() - started

    work = elapsed(probe) - elapsed(0)  # less the process's start
    shutil.rmtree(command[3])
    return max(1, round(probe * seconds / max(work, 1e-3)))


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time used so far by these processes (gone ones count 0)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def own_and_children_cpu() -> tuple[float, float]:
    """This process's CPU seconds (all its threads) and its ended children's."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


class Bench:
    def __init__(
        self,
        root: Path,
        store: ObjectStore,
        client: Any,
        arguments: Any,
        server_pids: Callable[[], list[int]] = list,
    ) -> None:
        self.root, self.store, self.client = root, store, client
        self.server_pids = server_pids
        self.saves = arguments.saves
        self.size = int(arguments.gib * GIB) // arguments.saves
        self.every = arguments.every
        self.env = training_env(arguments.training_cpu_set)
        self.products = products_for(arguments.compute_seconds, self.env)
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
        subprocess.run(command, check=True, env=self.env)

    def without_sync(self) -> float:
        folder = self.root / "checkpoint"
        return timed(lambda: self.train(folder), after=lambda: self.fresh("checkpoint"))

    def with_sync(self, objects: RunObjects) -> tuple[float, float, tuple[float, float, float]]:
        """The training's wall time with the sync beside it, the final sync's, and the CPU
        seconds of the training, of the sync and of the S3 server while it trained."""
        self.store.delete_prefix(objects.prefix)
        folder = self.fresh("checkpoint")
        sync = CheckpointSync(self.store, objects=objects, run_id="bench", node_index=NODE,
                              folder=folder, every_seconds=self.every,
                              note=lambda _: None)  # fmt: skip
        background = BackgroundCheckpointSync(sync)
        pids = self.server_pids()
        os.sync()  # as ``timed`` does before the training without sync
        (own, children), server = own_and_children_cpu(), cpu_seconds(pids)
        background.start()
        started = time.perf_counter()
        self.train(folder)
        training = time.perf_counter() - started
        (own_after, children_after), server_after = own_and_children_cpu(), cpu_seconds(pids)
        # Right after the training, its last writes not flushed first: as in a pod.
        started = time.perf_counter()
        background.finish()
        final = time.perf_counter() - started
        cpu = (children_after - children, own_after - own, server_after - server)
        return training, final, cpu

    def restore(self, objects: RunObjects) -> None:
        """Into ``restored``, emptied before the measure (as ``baseline``)."""
        restore_checkpoint(self.store, sources=[objects], objects=RunObjects(0, "restored"),
                           node_index=NODE, folder=self.root / "restored")  # fmt: skip

    def baseline_restore(self, objects: RunObjects) -> None:
        target = self.root / "baseline"
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
        cpus: list[tuple[float, float, float]] = []
        for number in range(repeat):
            measures: list[Callable[[], None]] = [
                lambda: plain.append(self.without_sync()),
                lambda: _each(self.with_sync(objects), synced, finals, cpus),
            ]
            for measure in measures if number % 2 == 0 else measures[::-1]:
                measure()
            manifest = read_manifest(self.store, objects, NODE)
            assert manifest is not None and len(manifest.files) == self.saves
            restoring = [
                lambda: restores.append(
                    timed(lambda: self.restore(objects), after=lambda: self.fresh("restored"))
                ),
                lambda: baselines.append(
                    timed(
                        lambda: self.baseline_restore(objects),
                        after=lambda: self.fresh("baseline"),
                    )
                ),
            ]
            for measure in restoring if number % 2 == 0 else restoring[::-1]:
                measure()
        without, training, final, restore, baseline = (
            statistics.median(x) for x in (plain, synced, finals, restores, baselines)
        )
        trained, synced_cpu, served = (statistics.median(x) for x in zip(*cpus, strict=True))
        return [
            ("training without sync", without, 1.0),
            (f"training with sync every {self.every:g}s", training, training / without),
            ("final sync after the training", final, (training + final) / without),
            ("  CPU s of the training meanwhile", trained, 1.0),
            ("  CPU s of the sync (/ training's)", synced_cpu, synced_cpu / trained),
            ("  CPU s of the S3 server (/ training's)", served, served / trained),
            ("baseline copy of the checkpoint", baseline, 1.0),
            ("restore_checkpoint", restore, baseline / restore),
        ]


def _each(
    measured: tuple[float, float, tuple[float, float, float]],
    trainings: list[float],
    finals: list[float],
    cpus: list[tuple[float, float, float]],
) -> None:
    trainings.append(measured[0])
    finals.append(measured[1])
    cpus.append(measured[2])


def run_backend(backend: str, arguments: argparse.Namespace) -> list[Figure]:
    total = int(arguments.gib * GIB)
    server = s3_server(memory_bytes=2 * total + GIB) if backend == "s3" else nullcontext()
    with tempfile.TemporaryDirectory(prefix=f"bench-checkpoint-{backend}-") as scratch:
        root = Path(scratch)
        with server as endpoint:
            server_pids: Callable[[], list[int]] = list
            if endpoint is not None:
                client = endpoint.client()
                client.create_bucket(Bucket="bench")
                store: ObjectStore = product_store(endpoint)
                server_pids = partial(pids_in, endpoint.folder)
            else:
                client, store = None, LocalFolderStore(root / "objects")
            return Bench(root, store, client, arguments, server_pids).run(arguments.repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="checkpoints written in all")
    parser.add_argument("--saves", type=int, default=16, help="checkpoint files written")
    parser.add_argument("--compute-seconds", type=float, default=1.0, help="work per save")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between syncs")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", default="local,s3")
    parser.add_argument(
        "--training-cpus", type=int, default=len(os.sched_getaffinity(0)) - 1,
        help="CPUs of the training's own (the rest: the sync, the S3 server); 0: all shared",
    )  # fmt: skip
    arguments = parser.parse_args()
    arguments.training_cpu_set = split_cpus(arguments.training_cpus)
    cpus = sorted(arguments.training_cpu_set)
    where = f"the training on CPUs {cpus}, the rest on the others" if cpus else "CPUs shared"
    print(
        f"{arguments.gib:g} GiB of checkpoints in {arguments.saves} files, about "
        f"{arguments.compute_seconds:g}s of work before each; median of {arguments.repeat}; "
        f"concurrency {CONCURRENCY}, parts {CHUNK_MIB} MiB; {where}"
    )
    print(f"{'backend':<8}{'measure':<40}{'seconds':>9}{'ratio':>8}")
    for backend in arguments.backends.split(","):
        for label, seconds, ratio in run_backend(backend, arguments):
            print(f"{backend:<8}{label:<40}{seconds:>9.3f}{ratio:>7.2f}x")


if __name__ == "__main__":
    main()
