"""The door to a run's log files: in the local run folder while the local launcher writes them
there, else in the object store (synced live by a pod's sidecar, collected after the run).

Only the files of the log contract (docs/concepts/logs-and-storage.md) of the run's own
nodes are ever opened: a name is looked up among the files listed, never joined to a path, so
no name can reach outside the run.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from hooks.local_store import send_file
from hooks.object_store import default_object_store
from hooks.zip_stream import ZipMember, zip_chunks
from octotrain.catalog.models import Run
from octotrain.contracts import LOG_KINDS, NodeLogNames
from octotrain.errors import NotFound
from octotrain.log_lines import LineIndex
from octotrain.run_layout import RunLayout, recorded_layout
from octotrain.settings import get_settings
from octotrain.storage import ObjectStore

CHUNK = 1024 * 1024
# The line indexes of the log files this process has paged, the most recently used kept: a
# page of a file paged before is numbered by reading at most one mark's span of it.
MAX_LINE_INDEXES = 256
_line_indexes: OrderedDict[str, LineIndex] = OrderedDict()
_line_indexes_lock = threading.Lock()


@dataclass(frozen=True)
class LogFile:
    name: str
    node: str
    kind: str  # one of LOG_KINDS
    size: int
    modified: float
    where: str  # "run folder" or "object store"


class FileRanges:
    """A local log file read at offsets (``octotrain.log_text.ByteRanges``)."""

    def __init__(self, path: Path) -> None:
        self.handle: BinaryIO = path.open("rb")
        self.size = os.fstat(self.handle.fileno()).st_size

    def read(self, start: int, end: int) -> bytes:
        return os.pread(self.handle.fileno(), max(0, end - start), start)

    def close(self) -> None:
        self.handle.close()


class StoreRanges:
    """An object of the store read at offsets, one ranged request each."""

    def __init__(self, store: ObjectStore, key: str, size: int) -> None:
        self.store, self.key, self.size = store, key, size

    def read(self, start: int, end: int) -> bytes:
        return self.store.read_range(self.key, start, min(end, self.size))

    def close(self) -> None:
        """Nothing is held open between requests."""


class RunLogs:
    def __init__(self, layout: RunLayout, store: ObjectStore, nodes: list[str]) -> None:
        self.layout = layout
        self.store = store
        self.nodes = nodes
        self.prefix = layout.objects.logs
        self._kinds = {
            name: (node, kind)
            for node in nodes
            for kind, name in NodeLogNames(layout.task_id, node).by_kind().items()
        }

    def files(self) -> list[LogFile]:
        """Every log file of every node, node by node in the order of ``LOG_KINDS``."""
        folder = self.layout.logs_dir
        if folder.is_dir():
            found = {
                entry.name: (stat.st_size, stat.st_mtime, "run folder")
                for entry in os.scandir(folder)
                if entry.name in self._kinds
                and entry.is_file()
                and (stat := entry.stat())  # one stat a file
            }
        else:
            found = {
                name: (info.size, info.modified, "object store")
                for info in self.store.list(self.prefix)
                if (name := info.key.rsplit("/", 1)[-1]) in self._kinds
            }
        files = [
            LogFile(name, *self._kinds[name], *found[name]) for name in self._kinds if name in found
        ]
        order = {node: rank for rank, node in enumerate(self.nodes)}
        return sorted(files, key=lambda f: (order[f.node], LOG_KINDS.index(f.kind)))

    def file(self, name: str) -> LogFile:
        found = next((log for log in self.files() if log.name == name), None)
        if found is None:
            raise NotFound(f"the run has no log file {name!r}")
        return found

    def node_files(self, node: str | None) -> list[LogFile]:
        """The files of one node (every node's with None)."""
        if node is not None and node not in self.nodes:
            raise NotFound(f"the run has no node {node!r}; it has {', '.join(self.nodes)}")
        return [log for log in self.files() if node in (None, log.node)]

    def local_path(self, log: LogFile) -> Path | None:
        """A path to read ``log`` in place: the run folder, or a local-folder store."""
        if log.where == "run folder":
            return self.layout.log_path(log.name)
        in_store = self.store.local_path(f"{self.prefix}/{log.name}")
        return in_store if in_store is not None and in_store.is_file() else None

    def ranges(self, log: LogFile) -> FileRanges | StoreRanges:
        path = self.local_path(log)
        if path is not None:
            return FileRanges(path)
        # The listing that found ``log`` is as fresh as a HEAD request would be.
        return StoreRanges(self.store, f"{self.prefix}/{log.name}", log.size)

    def line_number(self, log: LogFile, source: FileRanges | StoreRanges, offset: int) -> int:
        """The number (from 1) of the line of ``log`` that starts at byte ``offset``."""
        path = self.local_path(log)
        key = str(path) if path is not None else f"{self.store.url} {self.prefix}/{log.name}"
        with _line_indexes_lock:
            index = _line_indexes.pop(key, None) or LineIndex()
            _line_indexes[key] = index
            while len(_line_indexes) > MAX_LINE_INDEXES:
                _line_indexes.popitem(last=False)
            return index.line_at(source, offset)

    def chunks(self, log: LogFile, *, start: int = 0) -> Iterator[bytes]:
        """The content of ``log`` from ``start``, streamed in constant memory."""
        path = self.local_path(log)
        if path is None:
            yield from self.store.iter_bytes(f"{self.prefix}/{log.name}", start=start)
            return
        with path.open("rb") as handle:
            handle.seek(start)
            while chunk := handle.read(CHUNK):
                yield chunk

    def send_to(self, log: LogFile, descriptor: int, *, start: int = 0) -> int:
        """Write ``log`` from ``start`` to the pipe ``descriptor`` without bringing it through
        Python where the store can (how many bytes)."""
        path = self.local_path(log)
        if path is None:
            return self.store.send_to(f"{self.prefix}/{log.name}", descriptor, start=start)
        with path.open("rb") as handle:
            return send_file(handle, descriptor, start=start)

    def zip_chunks(self) -> Iterator[bytes]:
        """Every log file of the run as one zip (deflated: logs shrink several times), made
        as it is sent: nothing is staged, and memory stays a few chunks whatever the size."""
        members = (ZipMember(f"{log.node}/{log.name}", log.modified, self.chunks(log))
                   for log in self.files())  # fmt: skip
        return zip_chunks(members, deflate=True)


def run_logs_of(run: Run, store: ObjectStore | None = None) -> RunLogs:
    """The logs of a catalog run, where this machine's settings say they are. A run that has
    no plan yet (``validate`` has not recorded it) has no nodes, hence no files."""
    layout, nodes = recorded_layout(get_settings().runs_dir, run.task_id, run.plan or {})
    return RunLogs(layout, store or default_object_store(), nodes)
