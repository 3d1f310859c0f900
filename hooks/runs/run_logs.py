"""The door to a run's log files, among the run's files where its launcher keeps them
(``RunFiles``: the run folder while a local run is live, else the object store, where a pod's
sidecar syncs them live and ``collect_logs`` puts them after the run).

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

from hooks.runs.run_files import LiveThenStoreRunFiles, StoreRunFiles
from hooks.storage.local_store import send_file
from hooks.storage.zip_stream import ZipMember, zip_chunks
from octotrain.contracts import LOG_KINDS, NodeLogNames
from octotrain.errors import NotFound
from octotrain.log_lines import LineIndex
from octotrain.run_files import RunFiles

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
    """A file of the run's files read at offsets, one ranged request each."""

    def __init__(self, files: RunFiles, key: str, size: int) -> None:
        self.files, self.key, self.size = files, key, size

    def read(self, start: int, end: int) -> bytes:
        return self.files.read_range(self.key, start, min(end, self.size))

    def close(self) -> None:
        """Nothing is held open between requests."""


class RunLogs:
    def __init__(self, files: RunFiles, nodes: list[str]) -> None:
        self.run_files = files
        self.nodes = nodes
        self.prefix = files.objects.logs
        self._kinds = {
            name: (node, kind)
            for node in nodes
            for kind, name in NodeLogNames(files.objects.task_id, node).by_kind().items()
        }

    def files(self) -> list[LogFile]:
        """Every log file of every node, node by node in the order of ``LOG_KINDS``."""
        holder = self.run_files.holder(self.prefix)
        found = {
            name: (info.size, info.modified, holder.where)
            for info in holder.list(self.prefix)
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
        return self._holder(log).local_path(self._key(log))

    def ranges(self, log: LogFile) -> FileRanges | StoreRanges:
        path = self.local_path(log)
        if path is not None:
            return FileRanges(path)
        # The listing that found ``log`` is as fresh as a HEAD request would be.
        return StoreRanges(self.run_files, self._key(log), log.size)

    def line_number(self, log: LogFile, source: FileRanges | StoreRanges, offset: int) -> int:
        """The number (from 1) of the line of ``log`` that starts at byte ``offset``."""
        key = self._holder(log).address(self._key(log))
        with _line_indexes_lock:
            index = _line_indexes.pop(key, None) or LineIndex()
            _line_indexes[key] = index
            while len(_line_indexes) > MAX_LINE_INDEXES:
                _line_indexes.popitem(last=False)
            return index.line_at(source, offset)

    def chunks(self, log: LogFile, *, start: int = 0) -> Iterator[bytes]:
        """The content of ``log`` from ``start``, streamed in constant memory."""
        path, store = self.local_path(log), self._store(log)
        if path is None and store is not None:
            yield from store.store.iter_bytes(self._key(log), start=start)
            return
        if path is None:
            raise NotFound(f"the run has no log file {log.name!r}")
        with path.open("rb") as handle:
            handle.seek(start)
            while chunk := handle.read(CHUNK):
                yield chunk

    def send_to(self, log: LogFile, descriptor: int, *, start: int = 0) -> int:
        """Write ``log`` from ``start`` to the pipe ``descriptor`` without bringing it through
        Python where the store can (how many bytes)."""
        path, store = self.local_path(log), self._store(log)
        if path is None and store is not None:
            return store.store.send_to(self._key(log), descriptor, start=start)
        if path is None:
            raise NotFound(f"the run has no log file {log.name!r}")
        with path.open("rb") as handle:
            return send_file(handle, descriptor, start=start)

    def _key(self, log: LogFile) -> str:
        return f"{self.prefix}/{log.name}"

    def _holder(self, log: LogFile) -> RunFiles:
        """The holder whose listing found ``log`` (no request more to find it again)."""
        files = self.run_files
        if isinstance(files, LiveThenStoreRunFiles):
            return files.folder if log.where == files.folder.where else files.store_files
        return files

    def _store(self, log: LogFile) -> StoreRunFiles | None:
        """The store that holds ``log``, which streams it in one request; None: not a store."""
        holder = self._holder(log)
        return holder if isinstance(holder, StoreRunFiles) else None

    def zip_chunks(self) -> Iterator[bytes]:
        """Every log file of the run as one zip (deflated: logs shrink several times), made
        as it is sent: nothing is staged, and memory stays a few chunks whatever the size."""
        members = (ZipMember(f"{log.node}/{log.name}", log.modified, self.chunks(log))
                   for log in self.files())  # fmt: skip
        return zip_chunks(members, deflate=True)
