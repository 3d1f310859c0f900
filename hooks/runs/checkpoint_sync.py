"""A node's ``CHECKPOINT`` folder in the object store: synced while it trains, restored before
it trains again (the rules of what is synced and where: ``octotrain/checkpoints.py``).

The pod's sidecar (``hooks/kubernetes/pod_node.py``) and the local launcher's node task
(``operators/local/launch_local.py``) sync with ``CheckpointSync``; the stage steps restore with
``restore_checkpoint``. A sync uploads only files that changed since the last one, at most
every ``every_seconds`` while the training runs, and everything at its end.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from hooks.runs.run_files import StoreRunFiles
from octotrain.checkpoints import (
    CheckpointManifest,
    FileVersion,
    is_synced,
    same_rank_nodes,
    utc_now,
    version_key,
)
from octotrain.run_files import read_json, write_json
from octotrain.run_layout import RunObjects
from octotrain.storage import ObjectStore

# A file written to less than this long ago is taken to be still being written, until the
# training has ended (a torn file must never become part of the latest checkpoint).
SETTLE_SECONDS = 1.0
MIB = 1024 * 1024
# How much less CPU priority the live sync beside a training has (nice, 0-19).
SYNC_NICENESS = 10
# Files downloaded at once by a restore (each large one in parts by an S3 store, too).
RESTORE_CONCURRENCY = 4


def read_manifest(
    store: ObjectStore, objects: RunObjects, node_index: str
) -> CheckpointManifest | None:
    document = read_json(StoreRunFiles(store, objects), objects.checkpoint_manifest(node_index))
    return None if document is None else CheckpointManifest.from_json(document)


def left_checkpoint(store: ObjectStore, objects: RunObjects, node_indices: list[str]) -> bool:
    """Whether any node of the run ``objects`` synced a checkpoint (what a resume restores)."""
    files = StoreRunFiles(store, objects)
    return any(files.size(objects.checkpoint_manifest(node)) is not None for node in node_indices)


def write_manifest(
    store: ObjectStore, objects: RunObjects, node_index: str, manifest: CheckpointManifest
) -> None:
    """One object, written after every file it names: readers see the old or the new."""
    files = StoreRunFiles(store, objects)
    write_json(files, objects.checkpoint_manifest(node_index), manifest.to_json())


class CheckpointSync:
    """Mirror one node's ``CHECKPOINT`` folder into its run's checkpoint objects."""

    def __init__(
        self,
        store: ObjectStore,
        *,
        objects: RunObjects,
        run_id: str,
        node_index: str,
        folder: Path,
        every_seconds: float,
        note: Callable[[str], None],
    ) -> None:
        self.store, self.objects, self.node_index, self.folder = store, objects, node_index, folder
        self.every_seconds = every_seconds
        self.note = note
        self.prefix = objects.checkpoints(node_index)
        # The run's own manifest (a restarted node goes on from it; a resumed run's restore
        # wrote one naming the earlier run's files).
        self.manifest = read_manifest(store, objects, node_index) or CheckpointManifest(
            run_id=run_id, node_index=node_index, written=utc_now()
        )
        self.manifest = replace(self.manifest, run_id=run_id)
        self._last_sync = float("-inf")

    def due(self) -> bool:
        return time.monotonic() - self._last_sync >= self.every_seconds

    def sync(self, *, final: bool = False) -> bool:
        """Upload what changed (everything settled; at the end, ``final``, everything) and
        then the manifest; drop this run's versions no longer named. Whether anything
        changed. Not before ``every_seconds`` since the last sync, unless ``final``."""
        if not final and not self.due():
            return False
        self._last_sync = time.monotonic()
        present = self._present_files()
        files: dict[str, FileVersion] = {}
        uploaded = 0
        for relative, path in present.items():
            current = self.manifest.files.get(relative)
            version = self._synced_version(relative, path, current, final=final)
            if version is not None:
                files[relative] = version
                uploaded += version is not current
        if files == self.manifest.files:
            return False
        dropped = [
            version
            for relative, version in self.manifest.files.items()
            if files.get(relative) != version
        ]
        self.manifest = replace(self.manifest, files=files, written=utc_now())
        write_manifest(self.store, self.objects, self.node_index, self.manifest)
        for version in dropped:
            self._forget(version)
        self.note(
            f"checkpoint synced: {len(files)} files, {self.manifest.total_bytes / MIB:.1f} MiB "
            f"({uploaded} uploaded, {len(dropped)} replaced or removed)"
        )
        return True

    def _present_files(self) -> dict[str, Path]:
        if not self.folder.is_dir():
            return {}
        return {
            path.relative_to(self.folder).as_posix(): path
            for path in sorted(self.folder.rglob("*"))
            if path.is_file() and is_synced(path.relative_to(self.folder).as_posix())
        }

    def _synced_version(
        self, relative: str, path: Path, current: FileVersion | None, *, final: bool
    ) -> FileVersion | None:
        """The version of ``path`` the manifest names now: ``current`` while the file is
        unchanged or still being written, else the version just uploaded."""
        try:
            before = path.stat()
        except FileNotFoundError:  # removed since the listing
            return None
        if current is not None and current.same_as(before.st_size, before.st_mtime_ns):
            return current
        if not final and time.time() - before.st_mtime < SETTLE_SECONDS:
            return current
        key = version_key(self.prefix, relative, size=before.st_size, mtime_ns=before.st_mtime_ns)
        info = self.store.put_file(key, path)
        after = path.stat()
        if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
            self.store.delete_prefix(key.removesuffix(f"/{relative}"))  # torn: not named
            return current
        return FileVersion(
            key=key, size=before.st_size, mtime_ns=before.st_mtime_ns, checksum=info.checksum
        )

    def _forget(self, version: FileVersion) -> None:
        """Delete a version no longer named, if it is this run's (an earlier run's objects
        belong to that run's checkpoint)."""
        if version.key.startswith(self.prefix + "/"):
            relative_start = version.key.index("/", len(self.prefix) + 1)
            self.store.delete_prefix(version.key[:relative_start])


@dataclass(frozen=True)
class Restored:
    """What ``restore_checkpoint`` put into ``CHECKPOINT``, for the init log."""

    files: int
    size: int
    run_id: str
    node_index: str
    written: str
    seconds: float

    def in_words(self) -> str:
        return (
            f"restored checkpoint: {self.files} files, {self.size / MIB:.1f} MiB into CHECKPOINT "
            f"from run {self.run_id} node {self.node_index} (written {self.written}) "
            f"in {self.seconds:.1f}s"
        )


def restore_checkpoint(
    store: ObjectStore,
    *,
    sources: list[RunObjects],
    objects: RunObjects,
    node_index: str,
    folder: Path,
) -> Restored | None:
    """Fill ``folder`` with the newest checkpoint of the first of ``sources`` (this run first:
    a node started again; then the run it resumes) that has one for this node's rank; None
    when none has. Each file is downloaded under a work-in-progress name, verified, and renamed
    into place with its recorded write time (so that the sync sees it unchanged). This run's
    manifest then names those files, so that they stay the latest until the training writes
    new ones."""
    for source in sources:
        for candidate in same_rank_nodes(node_index):
            manifest = read_manifest(store, source, candidate)
            if manifest is None:
                continue
            started = time.monotonic()
            _download_all(store, manifest, folder)
            restored = Restored(
                files=len(manifest.files),
                size=manifest.total_bytes,
                run_id=manifest.run_id,
                node_index=candidate,
                written=manifest.written,
                seconds=time.monotonic() - started,
            )
            if source != objects or candidate != node_index:
                origin = {"run_id": manifest.run_id, "node_index": candidate,
                          "written": manifest.written}  # fmt: skip
                write_manifest(
                    store, objects, node_index,
                    replace(manifest, node_index=node_index, restored_from=origin),
                )  # fmt: skip
            return restored
    return None


def _download_all(store: ObjectStore, manifest: CheckpointManifest, folder: Path) -> None:
    """Every file of ``manifest`` into ``folder``, several at a time, each under a name the
    sync ignores; renamed into place only once all are whole and verified: a restore that
    fails leaves nothing of itself (and the node does not start)."""
    partials = {
        relative: (folder / relative).with_name(f".{Path(relative).name}.restoring")
        for relative in manifest.files
    }

    def download(relative: str) -> None:
        version = manifest.files[relative]
        store.get_file(version.key, partials[relative], checksum=version.checksum)
        os.utime(partials[relative], ns=(version.mtime_ns, version.mtime_ns))

    folder.mkdir(parents=True, exist_ok=True)
    try:
        with ThreadPoolExecutor(max_workers=RESTORE_CONCURRENCY) as pool:
            for done in [pool.submit(download, relative) for relative in manifest.files]:
                done.result()
    except BaseException:
        for partial in partials.values():
            partial.unlink(missing_ok=True)
        raise
    for relative, partial in partials.items():
        partial.replace(folder / relative)


class BackgroundCheckpointSync:
    """``CheckpointSync`` in a thread beside a node that trains in another process (the local
    launcher's node task): a failed sync is noted and tried again at the next one. The thread
    (and the copy threads it starts, which inherit it) runs at a lower CPU priority, so that on
    a busy machine the training, not its checkpoint's upload, gets the CPU; the final sync,
    once the training has ended, runs at the caller's."""

    def __init__(self, sync: CheckpointSync, *, poll_seconds: float = 0.5) -> None:
        self.checkpoints = sync
        self.poll_seconds = poll_seconds
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="checkpoint-sync", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> None:
        """The training has ended: stop the thread, then sync everything once more."""
        self._ended.set()
        self._thread.join()
        self._attempt(final=True)

    def _loop(self) -> None:
        with contextlib.suppress(OSError):  # Linux: a thread's own nice value
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), SYNC_NICENESS)
        while not self._ended.wait(self.poll_seconds):
            self._attempt(final=False)

    def _attempt(self, *, final: bool) -> None:
        try:
            self.checkpoints.sync(final=final)
        except Exception as error:  # the store may be briefly away: the next sync tries again
            self.checkpoints.note(f"checkpoint sync failed: {error}")
