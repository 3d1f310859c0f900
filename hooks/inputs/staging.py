"""Staging one node's inputs: data inputs into ``DATASET/<name>``, input models into ``MODEL``,
the algorithm's uploaded code into ``CODE``, before the algorithm starts.

Each input is fetched once per node machine into the node cache (``hooks/inputs/node_cache``),
several files at a time, every file checked against the checksum its manifest recorded (asked
for read-only, so that a local store may link its files rather than copy them); the node's
``DATASET`` and ``MODEL`` are then read-only views of the cache entries. Free space is
checked before anything is downloaded. What happens is written to the node's init log: what
was reused, and for downloads their progress (bytes, rate, ETA) and their throughput.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hooks.inputs.node_cache import WHOLE, NodeCache, ViewPart, discard, expose, human_bytes
from hooks.storage.hashing_io import WRITE_PERMISSIONS
from octotrain.contracts import NodeFolders
from octotrain.input_sources import StageSource
from octotrain.manifests import total_size
from octotrain.storage import ObjectStore, ObjectStoreError, prefix_of

Note = Callable[[str], None]
PROGRESS_EVERY_SECONDS = 2.0
# What one download thread takes at a time, at most: files, and bytes.
BATCH_FILES = 32
BATCH_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class StageTarget:
    """A node folder (``DATASET`` or ``MODEL``) and the inputs it shows: one sub-folder per
    input, or, with ``whole``, the single input's files themselves."""

    path: Path
    sources: list[StageSource] = field(default_factory=list)
    whole: bool = False


@dataclass(frozen=True)
class StageReport:
    name: str
    reused: bool
    files: int
    size: int
    seconds: float


BytesDone = Callable[[int, int], None]


class _Progress:
    """Bytes done of one input, noted at most every few seconds (threads add to it), and
    counted into the node's whole download (``overall``)."""

    def __init__(self, name: str, total: int, note: Note, overall: _Overall) -> None:
        self.name, self.total, self.note, self.overall = name, total, note, overall
        self.done = 0
        self.started = self.last = time.monotonic()
        self.lock = threading.Lock()

    def add(self, count: int) -> None:
        self.overall.add(count)
        with self.lock:
            self.done += count
            now = time.monotonic()
            if now - self.last < PROGRESS_EVERY_SECONDS:
                return
            self.last = now
        rate = self.done / max(now - self.started, 1e-6)
        eta = (self.total - self.done) / rate if rate else 0
        percent = 100 * self.done / self.total if self.total else 100
        self.note(
            f"{self.name}: {human_bytes(self.done)} of {human_bytes(self.total)} "
            f"({percent:.0f}%) at {human_bytes(rate)}/s, ETA {eta:.0f}s"
        )


class _Overall:
    """Bytes done of everything a node downloads, told to ``on_bytes`` (done, total) as they
    come (its phase's progress; the listener decides how often it records it)."""

    def __init__(self, total: int, on_bytes: BytesDone | None) -> None:
        self.total, self.on_bytes = total, on_bytes
        self.done = 0
        self.lock = threading.Lock()

    def add(self, count: int) -> None:
        if self.on_bytes is None:
            return
        with self.lock:
            self.done += count
            self.on_bytes(self.done, self.total)


def stage_inputs(
    store: ObjectStore,
    cache: NodeCache,
    folders: NodeFolders,
    sources: tuple[list[StageSource], list[StageSource]],
    note: Note,
    *,
    holder: str,
    on_bytes: BytesDone | None = None,
    code: StageSource | None = None,
) -> list[StageReport]:
    """Give a node its data inputs in ``DATASET``, its input models in ``MODEL`` and the
    algorithm's ``code`` in ``CODE``: the one layout of both launchers (a process's run
    folder, a pod's work folder); ``on_bytes`` hears of the download's bytes done of its
    total."""
    data, models = sources
    targets = [StageTarget(folders.dataset, data)]
    if code is not None:
        targets.append(StageTarget(folders.code, [code], whole=True))
    if models:  # incremental training: one input version's files are MODEL itself; several,
        targets.append(StageTarget(folders.model, models, whole=len(models) == 1))  # a folder each
    return stage_node(store, cache, targets, note, holder=holder, on_bytes=on_bytes)


def stage_node(
    store: ObjectStore,
    cache: NodeCache,
    targets: list[StageTarget],
    note: Note,
    *,
    holder: str,
    on_bytes: BytesDone | None = None,
) -> list[StageReport]:
    """Give each target its inputs, ``store.concurrency`` files at a time; the entries used
    are pinned for ``holder`` (the run's node) until it unpins them."""
    sources = [source for target in targets for source in target.sources]
    unrecorded = [source.name for source in sources if not source.digest]
    if unrecorded:
        raise ObjectStoreError(
            f"no checksums were recorded for {', '.join(unrecorded)}; run `octotrain init` "
            "to record them"
        )
    started = time.monotonic()
    for source in sources:  # pinned first: from now on no eviction takes them
        cache.pin(source.digest, holder)
    parts = {id(target): _parts(target) for target in targets if target.sources}
    views = {key: cache.valid_view(value) for key, value in parts.items()}
    if all(view is not None for view in views.values()):
        return _reused(cache, targets, views, note, started)
    valid = {source.digest for source in sources if cache.is_valid(source.digest, source.manifest)}
    missing = {source.digest: source for source in sources if source.digest not in valid}
    needed = sum(total_size(source.manifest) for source in missing.values())
    copied = [source for source in missing.values() if not _linked(store, source, cache)]
    on_disk = sum(total_size(source.manifest) for source in copied)
    cache.make_room(needed, keep={source.digest for source in sources}, on_disk=on_disk)
    if needed:
        # Links of a local store's files take no room; their bytes are read to be verified.
        verb = "linking and verifying" if not on_disk else "downloading"
        note(f"{verb} {human_bytes(needed)} for {len(missing)} input(s) into {cache.root}")
    overall = _Overall(needed, on_bytes)
    overall.add(0)
    reports = []
    with ThreadPoolExecutor(max_workers=store.concurrency) as pool:
        for source in sources:
            valid_now = source.digest in valid
            reports.append(_stage_entry(store, cache, pool, source, note, valid_now, overall))
    for target in targets:
        if target.sources:
            expose(cache.view(parts[id(target)]), target.path)
    return reports


def _linked(store: ObjectStore, source: StageSource, cache: NodeCache) -> bool:
    """The files of ``source`` will be hard links of the stored objects, which take no room
    on the cache's disk: tried with its first file (a local folder store on the cache's file
    system and mount; its objects read-only). A file that cannot be linked after all (one
    written into the store by hand) is copied without a free-space check."""
    folder = store.local_path(source.object_prefix)
    if folder is None or not source.manifest:
        return False
    first, probe = folder / next(iter(source.manifest)), cache.incoming("link-probe")
    try:
        if first.stat().st_mode & WRITE_PERMISSIONS:  # the rule link_hashing applies
            return False
        os.link(first, probe / "file")
    except OSError:
        return False
    finally:
        discard(probe)
    return True


def _parts(target: StageTarget) -> list[ViewPart]:
    return [
        ViewPart(WHOLE if target.whole else source.name, source.digest, source.manifest)
        for source in target.sources
    ]


def _reused(
    cache: NodeCache,
    targets: list[StageTarget],
    views: dict[int, Path | None],
    note: Note,
    started: float,
) -> list[StageReport]:
    """Every target's view is there and unchanged: link it, nothing to download."""
    reports = []
    for target in targets:
        view = views.get(id(target))
        if view is None:
            continue
        expose(view, target.path)
        for source in target.sources:
            cache.touch(source.digest)
            size = total_size(source.manifest)
            note(
                f"staged {source.name}: reused the verified copy in the node cache "
                f"({len(source.manifest)} files, {human_bytes(size)})"
            )
            reports.append(StageReport(source.name, True, len(source.manifest), size, 0.0))
    note(f"staged every input from the node cache in {time.monotonic() - started:.3f}s")
    return reports


def _stage_entry(
    store: ObjectStore,
    cache: NodeCache,
    pool: ThreadPoolExecutor,
    source: StageSource,
    note: Note,
    reused: bool,
    overall: _Overall,
) -> StageReport:
    """Fill the entry of ``source`` unless it was ``reused`` (found valid, and pinned since)."""
    started = time.monotonic()
    size = total_size(source.manifest)
    with cache.locked(source.digest):
        reused = reused or cache.is_valid(source.digest, source.manifest)
        if reused:
            cache.touch(source.digest)
        else:
            note(
                f"staging {source.kind} {source.name}: {len(source.manifest)} files, "
                f"{human_bytes(size)} from {store.url.rstrip('/')}/{source.object_prefix}/"
            )
            folder = cache.incoming(source.digest)
            try:
                _download(store, pool, source, folder, _Progress(source.name, size, note, overall))
                cache.commit(source.digest, folder, source.manifest)
            except BaseException:
                discard(folder)
                raise
    seconds = max(time.monotonic() - started, 1e-6)
    if reused:
        note(
            f"staged {source.name}: reused the verified copy in the node cache "
            f"({len(source.manifest)} files, {human_bytes(size)}) in {seconds:.2f}s"
        )
    else:
        note(
            f"staged {source.name}: {len(source.manifest)} files, {human_bytes(size)} in "
            f"{seconds:.2f}s ({human_bytes(size / seconds)}/s), every file's checksum verified"
        )
    return StageReport(source.name, reused, len(source.manifest), size, seconds)


def _download(
    store: ObjectStore,
    pool: ThreadPoolExecutor,
    source: StageSource,
    folder: Path,
    progress: _Progress,
) -> None:
    base, target = prefix_of(source.object_prefix), f"{folder}/"
    for parent in {os.path.dirname(relative) for relative in source.manifest}:
        os.makedirs(target + parent, exist_ok=True)

    def fetch(batch: list[tuple[str, dict[str, Any]]]) -> None:
        for relative, entry in batch:
            store.get_file(base + relative, target + relative, checksum=str(entry["blake3"]),
                           progress=progress.add, read_only=True)  # fmt: skip

    # list() so that the first failure is raised here, after the others have ended.
    list(pool.map(fetch, _batches(sorted(source.manifest.items()))))


def _batches(items: list[tuple[str, dict[str, Any]]]) -> Iterator[list[tuple[str, Any]]]:
    """Small files go to the download threads a few at a time: a future per file costs more
    than copying a small file's bytes. A batch stays small in bytes, so that large files
    still spread over every thread."""
    batch: list[tuple[str, Any]] = []
    size = 0
    for item in items:
        if batch and (len(batch) == BATCH_FILES or size + int(item[1]["size"]) > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += int(item[1]["size"])
    if batch:
        yield batch
