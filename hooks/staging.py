"""Staging one node's inputs: data inputs into ``DATASET/<name>``, input models into ``MODEL``,
before the algorithm starts.

Each input is fetched once per node machine into the node cache (``hooks/node_cache``),
several files at a time, every file checked against the SHA-256 its manifest recorded, then
hard-linked into the node's folder. Free space is checked before anything is downloaded. What
happens is written to the node's init log: what was reused, and for downloads their progress
(bytes, rate, ETA) and their throughput.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hooks.node_cache import NodeCache, human_bytes, link_tree
from octotrain.input_sources import StageSource
from octotrain.manifests import total_size
from octotrain.storage import ObjectStore, prefix_of

Note = Callable[[str], None]
PROGRESS_EVERY_SECONDS = 2.0


@dataclass(frozen=True)
class StageReport:
    name: str
    reused: bool
    files: int
    size: int
    seconds: float


class _Progress:
    """Bytes done of one input, noted at most every few seconds (threads add to it)."""

    def __init__(self, name: str, total: int, note: Note) -> None:
        self.name, self.total, self.note = name, total, note
        self.done = 0
        self.started = self.last = time.monotonic()
        self.lock = threading.Lock()

    def add(self, count: int) -> None:
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


def stage_node(
    store: ObjectStore,
    cache: NodeCache,
    inputs: list[tuple[StageSource, Path]],
    note: Note,
    *,
    workers: int = 8,
) -> list[StageReport]:
    """Give each ``(source, target folder)`` its files; raise (after noting why) on failure."""
    missing = [
        src for src, _ in inputs if not (src.digest and cache.is_valid(src.digest, src.manifest))
    ]
    needed = sum(total_size(src.manifest) for src in missing)
    cache.make_room(needed, keep={src.digest for src, _ in inputs})
    if needed:
        note(f"downloading {human_bytes(needed)} for {len(missing)} input(s) into {cache.root}")
    reports = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for source, target in inputs:
            reports.append(_stage_one(store, cache, pool, source, target, note))
    return reports


def _stage_one(
    store: ObjectStore,
    cache: NodeCache,
    pool: ThreadPoolExecutor,
    source: StageSource,
    target: Path,
    note: Note,
) -> StageReport:
    started = time.monotonic()
    size = total_size(source.manifest)
    if not source.digest:
        note(
            f"staging {source.kind} {source.name}: {len(source.manifest)} files, "
            f"{human_bytes(size)}, without verification (its checksums were never recorded)"
        )
        _download(store, pool, source, target, _Progress(source.name, size, note))
        return StageReport(
            source.name, False, len(source.manifest), size, time.monotonic() - started
        )
    with cache.locked(source.digest):
        reused = cache.is_valid(source.digest, source.manifest)
        if reused:
            cache.touch(source.digest)
        else:
            note(
                f"staging {source.kind} {source.name}: {len(source.manifest)} files, "
                f"{human_bytes(size)} from {store.url}{source.object_prefix}/"
            )
            folder = cache.incoming(source.digest)
            try:
                _download(store, pool, source, folder, _Progress(source.name, size, note))
                cache.commit(source.digest, folder, source.manifest)
            except BaseException:
                cache.discard(folder)
                raise
        link_tree(cache.entry_path(source.digest), source.manifest, target)
    seconds = max(time.monotonic() - started, 1e-6)
    if reused:
        note(
            f"staged {source.name}: reused the verified copy in the node cache "
            f"({len(source.manifest)} files, {human_bytes(size)}) in {seconds:.2f}s"
        )
    else:
        note(
            f"staged {source.name}: {len(source.manifest)} files, {human_bytes(size)} in "
            f"{seconds:.2f}s ({human_bytes(size / seconds)}/s), every file's SHA-256 verified"
        )
    return StageReport(source.name, reused, len(source.manifest), size, seconds)


def _download(
    store: ObjectStore,
    pool: ThreadPoolExecutor,
    source: StageSource,
    folder: Path,
    progress: _Progress,
) -> None:
    base = prefix_of(source.object_prefix)

    def fetch(item: tuple[str, dict[str, object]]) -> None:
        relative, entry = item
        expected = str(entry["sha256"]) or None
        store.get_file(base + relative, folder / relative, sha256=expected, progress=progress.add)

    # list() so that the first failure is raised here, after the others have ended.
    list(pool.map(fetch, sorted(source.manifest.items())))
