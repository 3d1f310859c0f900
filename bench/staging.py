"""Benchmark: staging data inputs and archiving a model, against plain copies in the same run.

For each backend (the local folder store; MinIO/S3, here a real S3 server: Ceph's radosgw on a
single-node cluster started on 127.0.0.1 by ``tests/radosgw.py``, its objects in RAM) it
measures:

- staging a dataset of one large file, and of many small files, with an empty node cache
  (download, checksum verification of every file, links into DATASET), against the plain copy:
  ``cp -r`` of the store's folder (local), boto3's transfer manager (S3), with the same
  concurrency and part size. Ratio: baseline time / staging time (throughput; goal >= 0.9).
  A local store links its files into a node cache on its own file system; the measures marked
  ``copied`` put the cache and the ``cp -r`` copy on another one (``--copy-dir``), where the
  files are copied;
- the same staging again with the node cache warm. Ratio: warm / cold time (goal <= 0.05);
- archiving a large model (upload with checksums, check, version committed in a SQLite catalog)
  against ``cp`` (local) or boto3's ``upload_file`` with a plain client (S3). Ratio: baseline /
  archive time. On S3 also ``upload_file`` with the client the store is given by its Airflow
  connection (bodies sent with their CRC32, unsigned: docs/concepts/tasks-and-catalog.md), the
  part of the ratio its settings make.

Each figure is the median of ``--repeat`` runs, baseline and Octotrain taking turns to go
first, each started right after deleting what its own side wrote the round before and
flushing written data to disk.

    uv run python -m bench.staging [--gib 1] [--small-files 10000] [--repeat 3]
                                   [--copy-dir /dev/shm]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from boto3.s3.transfer import TransferConfig, create_transfer_manager

from hooks.inputs.node_cache import NodeCache, discard
from hooks.inputs.staging import StageTarget, stage_node
from hooks.storage.local_store import LocalFolderStore, local_concurrency
from hooks.storage.s3_store import S3Store, s3_store_from_url
from octotrain.input_sources import StageSource
from octotrain.manifests import content_digest, manifest_of
from octotrain.storage import ObjectStore
from tests.radosgw import S3Endpoint, radosgw_cluster

MIB = 1024 * 1024
GIB = 1024 * MIB
CONCURRENCY = 8
CHUNK_MIB = 16
# (what, median seconds, ratio, every round's seconds): the rounds show the spread, which on
# a machine shared with the S3 server can move a median more than the code does.
Figure = tuple[str, float, float, list[float]]


def write_random(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    block = os.urandom(16 * MIB)
    with path.open("wb") as handle:
        left = size
        while left > 0:
            handle.write(block[: min(left, len(block))])
            left -= len(block)


def make_dataset(root: Path, total: int, files: int) -> dict[str, Path]:
    """``files`` files (one: a single large file) of ``total`` bytes together."""
    if files == 1:
        write_random(root / "data.bin", total)
        return {"data.bin": root / "data.bin"}
    block = os.urandom(total // files)
    made = {}
    for number in range(files):
        path = root / f"part-{number // 1000:02}" / f"{number:05}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(block[:-8] + number.to_bytes(8, "big"))
        made[path.relative_to(root).as_posix()] = path
    return made


def upload(store: ObjectStore, files: dict[str, Path], prefix: str) -> StageSource:
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        written = list(
            pool.map(lambda item: store.put_file(f"{prefix}/{item[0]}", item[1]), files.items())
        )
    manifest = manifest_of(written, prefix)
    return StageSource(
        prefix.rsplit("/", 1)[-1], "dataset", prefix, manifest, content_digest(manifest)
    )


def product_store(endpoint: S3Endpoint) -> S3Store:
    """The store of bucket ``bench`` as Octotrain makes it from an Airflow connection to
    ``endpoint`` (its client settings included); the baselines use a plain boto3 client."""
    # Not a line in the figures' table for the connection read (before Airflow's logging is).
    os.environ.setdefault("AIRFLOW__LOGGING__NAMESPACE_LEVELS", "airflow.providers.amazon=warning")
    os.environ["AIRFLOW_CONN_OCTOTRAIN_BENCH"] = json.dumps(
        {"conn_type": "aws", "login": endpoint.access_key, "password": endpoint.secret_key,
         "extra": {"endpoint_url": endpoint.url, "region_name": endpoint.region}}
    )  # fmt: skip
    found = s3_store_from_url(
        "s3://bench/o?conn_id=octotrain_bench", attempts=5, first_wait_seconds=0.5
    )
    assert (found.concurrency, found.part_bytes) == (CONCURRENCY, CHUNK_MIB * MIB)
    return found


@contextmanager
def s3_server(memory_bytes: int) -> Iterator[S3Endpoint]:
    """A real S3 server: Ceph's radosgw on a cluster of its own on 127.0.0.1 (tests/radosgw.py),
    keeping up to ``memory_bytes`` of objects in RAM; stopped, with every process, at the end."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-radosgw-") as folder,
        radosgw_cluster(Path(folder) / "cluster", memory_bytes=memory_bytes) as endpoint,
    ):
        yield endpoint


def timed(action: Callable[[], object], *, after: Callable[[], object]) -> float:
    """Seconds ``action`` takes, right ``after`` deleting what the same side wrote last round,
    written data flushed first (large writes are otherwise slowed by the previous measure's
    writeback). Each side thus writes into memory it has just freed: on a virtual machine
    that hands freed memory back to its host, a measure that found none freed took up to
    ten times as long as the same measure after one that had (bench/README.md)."""
    after()
    os.sync()
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


class Bench:
    def __init__(
        self,
        backend: str,
        root: Path,
        store: ObjectStore,
        client: Any,
        collect_garbage: Callable[[], None] = lambda: None,
    ) -> None:
        self.backend, self.root, self.store, self.client = backend, root, store, client
        self.collect_garbage = collect_garbage
        self.config = TransferConfig(
            multipart_threshold=CHUNK_MIB * MIB,
            multipart_chunksize=CHUNK_MIB * MIB,
            max_concurrency=CONCURRENCY,
        )

    def fresh(self, name: str) -> Path:
        """``name`` under the bench's folder, emptied (the cache's entries are read-only)."""
        path = self.root / name
        discard(path)
        return path

    def release(self, *prefixes: str) -> None:
        """Delete what the measures wrote to the store: the S3 server holds objects in RAM."""
        for prefix in prefixes:
            self.store.delete_prefix(prefix)
        self.collect_garbage()

    def baseline_download(self, source: StageSource) -> None:
        """Into ``baseline``, emptied with the round's other folders before either side is
        timed, so that neither side's time includes deleting the round before's copy."""
        target = self.root / "baseline"
        if isinstance(self.store, LocalFolderStore):
            subprocess.run(
                ["cp", "-r", str(self.store.local_path(source.object_prefix)), str(target)],
                check=True,
            )
            return
        assert isinstance(self.store, S3Store)
        with create_transfer_manager(self.client, self.config) as manager:
            futures = []
            for relative in source.manifest:
                path = target / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                key = f"{self.store.prefix}{source.object_prefix}/{relative}"
                futures.append(manager.download(self.store.bucket, key, str(path)))
            for future in futures:
                future.result()

    def upload(self, model: Path, number: int, client: Any = None) -> None:
        """The baseline of archiving: the plain copy or upload of the model file (with a plain
        boto3 client, or ``client``)."""
        if isinstance(self.store, LocalFolderStore):
            target = self.root / "baseline-model" / "model.bin"
            target.parent.mkdir(parents=True)
            shutil.copyfile(model, target)
        else:
            assert isinstance(self.store, S3Store)
            key = f"{self.store.prefix}baseline/model-{number}.bin"
            uploader = client or self.client
            uploader.upload_file(str(model), self.store.bucket, key, Config=self.config)

    def stage(self, source: StageSource, cache: NodeCache) -> None:
        """Stage into a new run's DATASET (a fresh folder, as each run has)."""
        dataset = self.root / "runs" / uuid.uuid4().hex / "dataset"
        stage_node(
            self.store,
            cache,
            [StageTarget(dataset, [source])],
            lambda _note: None,
            holder="bench-",
        )

    def staging(self, label: str, source: StageSource, repeat: int) -> list[Figure]:
        baselines, colds, warms = [], [], []
        caches: list[NodeCache] = []

        def new_cache() -> None:
            self.fresh("runs")
            caches.append(NodeCache(self.fresh("cache"), max_bytes=64 * GIB))

        measures = [
            lambda: baselines.append(
                timed(lambda: self.baseline_download(source), after=lambda: self.fresh("baseline"))
            ),
            lambda: colds.append(timed(lambda: self.stage(source, caches[-1]), after=new_cache)),
        ]
        for number in range(repeat):
            for measure in measures if number % 2 == 0 else measures[::-1]:
                measure()
            warms.append(timed(lambda: self.stage(source, caches[-1]), after=lambda: None))
        for folder in ("runs", "cache", "baseline"):
            self.fresh(folder)
        baseline, cold, warm = (statistics.median(x) for x in (baselines, colds, warms))
        return [
            (f"stage {label}: baseline", baseline, 1.0, baselines),
            (f"stage {label}: cold cache", cold, baseline / cold, colds),
            (f"stage {label}: warm cache", warm, warm / cold, warms),
        ]

    def archive(self, model: Path, repeat: int) -> list[Figure]:
        prepared_run = demo_archiver(self.store, self.root)
        baselines, ours, alike = [], [], []
        store_client = self.store.client if isinstance(self.store, S3Store) else None
        versions: list[Any] = []

        def release_baseline() -> None:
            self.fresh("baseline-model")
            self.release("baseline")

        def release_version() -> None:
            if versions:
                self.release(versions.pop().object_prefix)

        for number in range(repeat):
            archive = prepared_run(number)
            measures = [
                lambda number=number: baselines.append(
                    timed(lambda: self.upload(model, number), after=release_baseline)
                ),
                lambda archive=archive: ours.append(
                    timed(lambda: versions.append(archive(model)), after=release_version)
                ),
            ]
            if store_client is not None:
                measures.append(
                    lambda number=number: alike.append(
                        timed(
                            lambda: self.upload(model, number, store_client),
                            after=release_baseline,
                        )
                    )
                )
            turn = number % len(measures)
            for measure in measures[turn:] + measures[:turn]:
                measure()
        release_baseline()
        release_version()
        baseline, archived = statistics.median(baselines), statistics.median(ours)
        figures: list[Figure] = [("archive model: baseline", baseline, 1.0, baselines)]
        if alike:
            # The same upload with the store's client settings (bodies unsigned, docs): how
            # much of the ratio those settings make, how much the rest of the archive costs.
            upload = statistics.median(alike)
            figures.append(("archive model: store's client", upload, baseline / upload, alike))
        return [*figures, ("archive model: Octotrain", archived, baseline / archived, ours)]


def demo_archiver(store: ObjectStore, root: Path) -> Callable[[int], Callable[[Path], object]]:
    """A run of the demo task ready to archive a file as the next version of its repository
    (SQLite catalog; the run is prepared outside the measure)."""
    from cli.demo import seed_demo
    from hooks.runs.model_archive import archive_outputs
    from hooks.storage.catalog import CatalogHook
    from octotrain.catalog.models import Run, RunState, TrainingTask
    from octotrain.planning import build_run_plan

    catalog = CatalogHook(f"sqlite:///{root / 'catalog.db'}")
    catalog.migrate()
    task_id = seed_demo(catalog, LocalFolderStore(root / "demo-objects")).task_id

    def prepare(number: int) -> Callable[[Path], object]:
        with catalog.session() as session:
            task = session.get(TrainingTask, task_id)
            plan = build_run_plan(
                session,
                task,
                run_id=f"bench__{number}",
                master_addr="127.0.0.1",
                master_port=1,
                triggered_by="bench",
            )
            run = Run(
                task_id=task_id, airflow_run_id=plan.run_id, state=RunState.RUNNING, node_count=2
            )
            session.add(run)
            session.flush()
            plan = plan.model_copy(update={"catalog_run_id": run.id})
        return lambda model: archive_outputs(
            catalog, store, plan, {"model.bin": model}, plan.lineage
        )

    return prepare


@contextmanager
def another_file_system(store: LocalFolderStore, folder: str) -> Iterator[Bench | None]:
    """A bench whose node cache and ``cp -r`` copy are in ``folder``, on another file system
    than the store (else None): the store's files cannot be linked there and are copied."""
    if not folder or os.stat(folder).st_dev == os.stat(store.root).st_dev:
        print(f"(no copied figures: {folder or '--copy-dir'} is on the store's file system)")
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="bench-staging-copied-", dir=folder) as scratch:
        yield Bench("local", Path(scratch), store, None)


def run_backend(backend: str, arguments: argparse.Namespace) -> Iterator[Figure]:
    """The figures of one backend, each as soon as it is measured (a failure later loses none)."""
    total = int(arguments.gib * GIB)
    # Both datasets, then the model twice (baseline and Octotrain), with room to spare.
    server = s3_server(memory_bytes=4 * total + GIB) if backend == "s3" else nullcontext()
    with tempfile.TemporaryDirectory(prefix=f"bench-staging-{backend}-") as scratch:
        root = Path(scratch)
        one = make_dataset(root / "src-one", total, 1)
        many = make_dataset(root / "src-many", total, arguments.small_files)
        with server as endpoint:
            if endpoint is not None:
                client = endpoint.client()
                client.create_bucket(Bucket="bench")
                store: ObjectStore = product_store(endpoint)
                bench = Bench(backend, root, store, client, endpoint.collect_garbage)
            else:
                store = LocalFolderStore(root / "objects")
                bench = Bench(backend, root, store, None)
            one_source = upload(store, one, "datasets/bench/one/v1")
            many_source = upload(store, many, "datasets/bench/many/v1")
            many_label = f"{arguments.small_files} files"
            yield from bench.staging("1 file", one_source, arguments.repeat)
            yield from bench.staging(many_label, many_source, arguments.repeat)
            if isinstance(store, LocalFolderStore):
                with another_file_system(store, arguments.copy_dir) as elsewhere:
                    if elsewhere is not None:
                        yield from elsewhere.staging("1 file, copied", one_source, arguments.repeat)
                        yield from elsewhere.staging(
                            f"{many_label}, copied", many_source, arguments.repeat
                        )
            bench.release(one_source.object_prefix, many_source.object_prefix)
            yield from bench.archive(one["data.bin"], arguments.repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0, help="dataset and model size")
    parser.add_argument("--small-files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", default="local,s3")
    parser.add_argument(
        "--copy-dir",
        default="/dev/shm",
        help="a folder on another file system than the temporary folder: a node cache there "
        "gets copies of the local store's files, not links ('' leaves it out)",
    )
    arguments = parser.parse_args()
    print(
        f"{arguments.gib:g} GiB; {arguments.small_files} small files; median of "
        f"{arguments.repeat}; S3 concurrency {CONCURRENCY}, parts {CHUNK_MIB} MiB; local "
        f"concurrency {local_concurrency()} (the cores)"
    )
    print(f"{'backend':<8}{'measure':<42}{'seconds':>9}{'ratio':>8}   rounds (s)")
    for backend in arguments.backends.split(","):
        for label, seconds, ratio, rounds in run_backend(backend, arguments):
            spread = " ".join(f"{each:.2f}" for each in rounds)
            print(f"{backend:<8}{label:<42}{seconds:>9.3f}{ratio:>7.2f}x   {spread}", flush=True)


if __name__ == "__main__":
    main()
