"""A node's local cache of staged data, keyed by content digest, bounded, least recently used
evicted first.

An entry is the files of one manifest, downloaded and verified once, kept read-only under
``<root>/<digest>/`` with their recorded sizes and modification times in
``<root>/<digest>.json``. A run's ``DATASET/<name>`` (or ``MODEL``) receives hard links to the
entry's files, so a second run with the same inputs stages in the time it takes to check a
few ``stat`` calls and make the links. An entry whose files were changed or removed fails
that check and is downloaded again. Entries are locked while they are filled or linked
(``fcntl``), so the nodes of a run on one machine download each input once, and eviction never
takes an entry from under a run (a link taken before the eviction keeps its data anyway).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from octotrain.manifests import Manifest, total_size

READ_ONLY = 0o444
# Room left free on the data disk beside what staging writes.
DISK_RESERVE_BYTES = 64 * 1024 * 1024


class DiskTooSmall(RuntimeError):
    """The data disk cannot hold the inputs; nothing was downloaded."""


@dataclass(frozen=True)
class Entry:
    digest: str
    path: Path
    size: int
    last_used: float


class NodeCache:
    def __init__(
        self,
        root: Path,
        *,
        max_bytes: int,
        free_bytes: Callable[[Path], int] = lambda path: shutil.disk_usage(path).free,
    ) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.free_bytes = free_bytes
        for folder in (root, root / ".incoming", root / ".locks"):
            folder.mkdir(parents=True, exist_ok=True)

    def entry_path(self, digest: str) -> Path:
        return self.root / digest

    def _record(self, digest: str) -> Path:
        return self.root / f"{digest}.json"

    @contextmanager
    def locked(self, digest: str, *, wait: bool = True) -> Iterator[bool]:
        """Hold the entry's lock; with ``wait=False`` yield False at once if another holds it."""
        with (self.root / ".locks" / f"{digest}.lock").open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def is_valid(self, digest: str, manifest: Manifest) -> bool:
        """The entry holds exactly the manifest's files, unchanged since they were verified."""
        try:
            recorded: dict[str, Any] = json.loads(self._record(digest).read_text())
        except (OSError, ValueError):
            return False
        if set(recorded.get("files", {})) != set(manifest):
            return False
        base = self.entry_path(digest)
        for relative, seen in recorded["files"].items():
            try:
                stat = (base / relative).stat()
            except OSError:
                return False
            if stat.st_size != manifest[relative]["size"] or stat.st_mtime_ns != seen["mtime_ns"]:
                return False
        return True

    def touch(self, digest: str) -> None:
        os.utime(self._record(digest))

    def incoming(self, digest: str) -> Path:
        """A private folder to download an entry into before ``commit``."""
        folder = self.root / ".incoming" / f"{digest}-{uuid.uuid4().hex[:8]}"
        folder.mkdir(parents=True)
        return folder

    def commit(self, digest: str, folder: Path, manifest: Manifest) -> Path:
        """Make ``folder`` (fully downloaded and verified) the entry of ``digest``."""
        files = {}
        for relative in manifest:
            path = folder / relative
            path.chmod(READ_ONLY)
            files[relative] = {"mtime_ns": path.stat().st_mtime_ns}
        target = self.entry_path(digest)
        self.remove(digest)
        folder.replace(target)
        partial = self._record(digest).with_suffix(".json.partial")
        partial.write_text(json.dumps({"files": files, "size": total_size(manifest)}))
        partial.replace(self._record(digest))
        return target

    def remove(self, digest: str) -> None:
        self._record(digest).unlink(missing_ok=True)
        self.discard(self.entry_path(digest))

    def discard(self, folder: Path) -> None:
        """Remove an entry's or an incoming download's folder, read-only files included."""
        if not folder.exists():
            return
        for path in folder.rglob("*"):
            if path.is_file():
                path.chmod(0o644)
        shutil.rmtree(folder)

    def entries(self) -> list[Entry]:
        found = []
        for record in self.root.glob("*.json"):
            try:
                size = int(json.loads(record.read_text())["size"])
                last_used = record.stat().st_mtime
            except (OSError, ValueError, KeyError):
                continue
            digest = record.stem
            found.append(Entry(digest, self.entry_path(digest), size, last_used))
        return sorted(found, key=lambda entry: entry.last_used)

    def make_room(self, needed: int, *, keep: set[str]) -> None:
        """Evict least recently used entries until ``needed`` more bytes fit both the cache's
        bound and the disk; ``DiskTooSmall`` if they cannot."""
        for entry in self.entries():
            if self._fits(needed):
                break
            if entry.digest in keep:
                continue
            with self.locked(entry.digest, wait=False) as acquired:
                if acquired:
                    self.remove(entry.digest)
        if not self._fits(needed):
            free = self.free_bytes(self.root)
            raise DiskTooSmall(
                f"the data inputs need {human_bytes(needed)} but the node's data disk at "
                f"{self.root} has {human_bytes(max(free - DISK_RESERVE_BYTES, 0))} free "
                f"(cache bound {human_bytes(self.max_bytes)}); nothing was downloaded"
            )

    def _fits(self, needed: int) -> bool:
        used = sum(entry.size for entry in self.entries())
        disk_ok = self.free_bytes(self.root) - DISK_RESERVE_BYTES >= needed
        return disk_ok and used + needed <= self.max_bytes


def link_tree(entry: Path, manifest: Manifest, target: Path) -> None:
    """Give ``target`` the entry's files as hard links (copies across file systems)."""
    for relative in manifest:
        source, destination = entry / relative, target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.unlink(missing_ok=True)
        try:
            os.link(source, destination)
        except OSError:
            shutil.copy2(source, destination)


def human_bytes(count: float) -> str:
    """``1536`` → ``1.5 KiB``."""
    if count < 1024:
        return f"{int(count)} B"
    for unit in ("KiB", "MiB", "GiB"):
        count /= 1024
        if count < 1024 or unit == "GiB":
            break
    return f"{count:.1f} {unit}"
