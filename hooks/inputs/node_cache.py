"""A node's local cache of staged data, keyed by content digest, bounded, least recently used
evicted first.

An *entry* is the files of one manifest, downloaded and verified once, kept read-only under
``<root>/<digest>/``, the files' modification times recorded in ``<root>/<digest>.json``. A
node's ``DATASET`` (or ``MODEL``) is a link to a *view*: a read-only folder of real sub-folders
(``<dataset>_<version>/`` …) whose files are hard links to the entries' files, kept under
``<root>/views/`` for each set of inputs. So a second run with the same inputs stages in the
time it takes to ``stat`` the view's files and make one link, while the training code sees
plain folders (``os.walk`` and ``rglob`` descend into them). An entry or view whose files were
changed or removed fails that check and is made again.

Entries are locked while they are filled and views while they are made (``fcntl``), so the
nodes of a run on one machine download each input once and make each view once; entries are
pinned while a run uses them (``<root>/.pins/<digest>/<run>``), so that eviction never takes
one from under a run. ``unpin`` releases a run's pins when it
ends; pins older than ``STALE_PIN_SECONDS`` are taken as left by a run that died. Evicting an
entry removes the views made of it (their links would keep its disk space).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks.storage.cores import cores_available
from octotrain.manifests import Manifest, total_size

READ_ONLY_FILE = 0o444
READ_ONLY_FOLDER = 0o555
# Room left free on the data disk beside what staging writes.
DISK_RESERVE_BYTES = 64 * 1024 * 1024
STALE_PIN_SECONDS = 30 * 24 * 3600
# Threads making a view's links, at most (one per core below that).
LINK_THREADS = 8
# A view's part that is an entry itself (a single input model is MODEL).
WHOLE = ""


class DiskTooSmall(RuntimeError):
    """The data disk cannot hold the inputs; nothing was downloaded."""


@dataclass(frozen=True)
class Entry:
    digest: str
    path: Path
    size: int
    last_used: float


@dataclass(frozen=True)
class ViewPart:
    """One input in a view: the entry ``digest`` of ``manifest``, under ``name`` (``WHOLE``:
    the view is the entry itself)."""

    name: str
    digest: str
    manifest: Manifest


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
        for folder in ("", ".incoming", ".locks", ".pins", "views"):
            (root / folder).mkdir(parents=True, exist_ok=True)

    # ---- entries --------------------------------------------------------------------------

    def entry_path(self, digest: str) -> Path:
        return self.root / digest

    def _record(self, digest: str) -> Path:
        return self.root / f"{digest}.json"

    @contextmanager
    def locked(self, name: str, *, wait: bool = True) -> Iterator[bool]:
        """Hold the lock of ``name`` (an entry's digest, or a view's); with ``wait=False``
        yield False at once if another holds it."""
        with (self.root / ".locks" / f"{name}.lock").open("a") as handle:
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
        recorded = _read_json(self._record(digest))
        if recorded is None:
            return False
        files = recorded["files"]
        expected = {path: (entry["size"], files.get(path)) for path, entry in manifest.items()}
        return len(files) == len(manifest) and _unchanged(f"{self.entry_path(digest)}/", expected)

    def touch(self, digest: str) -> None:
        os.utime(self._record(digest))

    def incoming(self, digest: str) -> Path:
        """A private folder to download an entry into before ``commit``."""
        folder = self.root / ".incoming" / f"{digest}-{uuid.uuid4().hex[:8]}"
        folder.mkdir(parents=True)
        return folder

    def commit(self, digest: str, folder: Path, manifest: Manifest) -> Path:
        """Make ``folder`` (fully downloaded and verified) the read-only entry of ``digest``."""
        files = _seal(folder, list(manifest))
        self.remove(digest)
        folder.replace(self.entry_path(digest))
        _write_json(self._record(digest), {"files": files, "size": total_size(manifest)})
        return self.entry_path(digest)

    def remove(self, digest: str) -> None:
        """Remove an entry, and the views made of it."""
        for record in (self.root / "views").glob("*.json"):
            view = _read_json(record)
            if view is None or digest in view["digests"]:
                record.unlink(missing_ok=True)
                discard(record.with_suffix(""))
        self._record(digest).unlink(missing_ok=True)
        discard(self.entry_path(digest))

    # ---- views ----------------------------------------------------------------------------

    def _view_paths(self, parts: list[ViewPart]) -> tuple[Path, Path]:
        key = hashlib.sha256(
            "".join(f"{part.name}\0{part.digest}\n" for part in parts).encode()
        ).hexdigest()
        return self.root / "views" / key, self.root / "views" / f"{key}.json"

    def valid_view(self, parts: list[ViewPart]) -> Path | None:
        """The view of ``parts`` if one exists whose files are all unchanged (its files are
        the entries' files, so this also checks the entries), else None."""
        if len(parts) == 1 and parts[0].name == WHOLE:
            part = parts[0]
            valid = self.is_valid(part.digest, part.manifest)
            return self.entry_path(part.digest) if valid else None
        path, record = self._view_paths(parts)
        recorded = _read_json(record)
        if recorded is None:
            return None
        files = recorded["files"]
        expected = {
            name: (entry["size"], files.get(name))
            for part in parts
            for relative, entry in part.manifest.items()
            if (name := f"{part.name}/{relative}")
        }
        if len(files) != len(expected) or not _unchanged(f"{path}/", expected):
            return None
        os.utime(record)
        return path

    def view(self, parts: list[ViewPart]) -> Path:
        """The view of ``parts`` (each a valid entry), made unless a valid one exists.

        The nodes of a run on one machine ask for the same view at once: under the view's
        lock one makes it and the others find it, where they would otherwise delete it under
        each other and fail to move their own into its place."""
        path, record = self._view_paths(parts)
        with self.locked(f"view-{path.name}"):
            found = self.valid_view(parts)
            return found if found is not None else self._make_view(parts, path, record)

    def _make_view(self, parts: list[ViewPart], path: Path, record: Path) -> Path:
        record.unlink(missing_ok=True)
        discard(path)
        folder = self.root / ".incoming" / f"view-{path.name[:16]}-{uuid.uuid4().hex[:8]}"
        files = {}
        folders: list[tuple[str, str, list[str]]] = []  # (entry, view, files) per folder
        for part in parts:
            source, target = f"{self.entry_path(part.digest)}/", f"{folder}/{part.name}/"
            by_parent: dict[str, list[str]] = {}
            for relative in part.manifest:
                by_parent.setdefault(os.path.dirname(relative), []).append(relative)
            for parent, relatives in by_parent.items():
                os.makedirs(target + parent, exist_ok=True)
                folders.append((source, target, relatives))
            # The links are the entry's files (same inodes): already read-only, and their
            # modification times are the entry's record, so neither is done twice per file.
            entry_files = (_read_json(self._record(part.digest)) or {})["files"]
            for relative in part.manifest:
                files[f"{part.name}/{relative}"] = entry_files[relative]
        # A folder per thread: the kernel adds one name at a time to a folder, but links into
        # two folders at once (10,000 files in 10 folders: 0.080 s on one thread, 0.054 s on 2).
        with ThreadPoolExecutor(max_workers=min(LINK_THREADS, cores_available())) as pool:
            list(pool.map(_link_folder, folders))
        _seal_folders(folder)
        folder.replace(path)
        _write_json(record, {"files": files, "digests": [part.digest for part in parts]})
        return path

    # ---- pins and eviction ----------------------------------------------------------------

    def pin(self, digest: str, holder: str) -> None:
        """Keep the entry while ``holder`` (a run's node) uses it."""
        pins = self.root / ".pins" / digest
        pins.mkdir(parents=True, exist_ok=True)
        (pins / holder).touch()

    def unpin(self, holder_prefix: str) -> None:
        """Release every pin whose holder starts with ``holder_prefix`` (a run ended)."""
        for pin in self.root.glob(".pins/*/*"):
            if pin.name.startswith(holder_prefix):
                pin.unlink(missing_ok=True)

    def pinned(self, digest: str) -> bool:
        now = time.time()
        return any(
            now - pin.stat().st_mtime < STALE_PIN_SECONDS
            for pin in (self.root / ".pins" / digest).glob("*")
        )

    def entries(self) -> list[Entry]:
        found = []
        for record in self.root.glob("*.json"):
            recorded = _read_json(record)
            if recorded is None:
                continue
            digest = record.stem
            size, used = int(recorded["size"]), record.stat().st_mtime
            found.append(Entry(digest, self.entry_path(digest), size, used))
        return sorted(found, key=lambda entry: entry.last_used)

    def make_room(self, needed: int, *, keep: set[str], on_disk: int | None = None) -> None:
        """Evict least recently used entries (not pinned, not locked, not in ``keep``) until
        ``needed`` more bytes fit the cache's bound, and ``on_disk`` of them (all by default;
        fewer where files are hard links of a local store's, which take no room) the disk;
        ``DiskTooSmall`` if they cannot."""
        on_disk = needed if on_disk is None else on_disk
        for entry in self.entries():
            if self._fits(needed, on_disk):
                break
            if entry.digest in keep or self.pinned(entry.digest):
                continue
            with self.locked(entry.digest, wait=False) as acquired:
                if acquired:
                    self.remove(entry.digest)
        if not self._fits(needed, on_disk):
            raise DiskTooSmall(self._too_small(needed, on_disk))

    def _too_small(self, needed: int, on_disk: int) -> str:
        free = max(self.free_bytes(self.root) - DISK_RESERVE_BYTES, 0)
        bound = f"cache bound {human_bytes(self.max_bytes)}"
        if free < on_disk:
            return (
                f"the data inputs need {human_bytes(on_disk)} but the node's data disk at "
                f"{self.root} has {human_bytes(free)} free ({bound}); nothing was downloaded"
            )
        used = sum(entry.size for entry in self.entries())
        return (
            f"the data inputs need {human_bytes(needed)} but the node cache at {self.root} "
            f"keeps {human_bytes(used)} for runs that use it ({bound}); nothing was downloaded"
        )

    def _fits(self, needed: int, on_disk: int) -> bool:
        if not needed:
            return True
        used = sum(entry.size for entry in self.entries())
        disk_ok = not on_disk or self.free_bytes(self.root) - DISK_RESERVE_BYTES >= on_disk
        return disk_ok and used + needed <= self.max_bytes


def expose(view: Path, target: Path) -> None:
    """Make ``target`` (``DATASET`` or ``MODEL``) a link to ``view``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        target.rmdir()  # the empty folder the node's layout made; a full one is an error
    target.symlink_to(view, target_is_directory=True)


def discard(folder: Path) -> None:
    """Remove a folder of the cache (entries and views are read-only: made writable first)."""
    if not folder.exists():
        return
    for path, _folders, _files in os.walk(folder):
        os.chmod(path, 0o755)
    shutil.rmtree(folder)


def human_bytes(count: float) -> str:
    """``1536`` → ``1.5 KiB``."""
    if count < 1024:
        return f"{int(count)} B"
    for unit in ("KiB", "MiB", "GiB"):
        count /= 1024
        if count < 1024 or unit == "GiB":
            break
    return f"{count:.1f} {unit}"


def _link_folder(folder: tuple[str, str, list[str]]) -> None:
    """Link the files of one folder of an entry (``source``) into a view (``target``)."""
    source, target, files = folder
    for relative in files:
        os.link(source + relative, target + relative)


def _seal(folder: Path, relatives: list[str]) -> dict[str, int]:
    """Make ``folder`` read-only; return each file's modification time (ns). A file already
    read-only (a stored object's link) is left as it is: changing its mode is a write to the
    file system for nothing."""
    base = f"{folder}/"
    files = {}
    for relative in relatives:
        stat = os.stat(base + relative)
        if stat.st_mode & 0o777 != READ_ONLY_FILE:
            os.chmod(base + relative, READ_ONLY_FILE)
        files[relative] = stat.st_mtime_ns
    _seal_folders(folder)
    return files


def _seal_folders(folder: Path) -> None:
    for path, _folders, _files in os.walk(folder):
        os.chmod(path, READ_ONLY_FOLDER)


def _unchanged(base: str, expected: dict[str, tuple[int, int | None]]) -> bool:
    """Every file under ``base`` has its (size, recorded modification time)."""
    for relative, (size, mtime_ns) in expected.items():
        try:
            stat = os.stat(base + relative)
        except OSError:
            return False
        if stat.st_size != size or stat.st_mtime_ns != mtime_ns:
            return False
    return True


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def _write_json(path: Path, document: dict[str, Any]) -> None:
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(document))
    partial.replace(path)
