"""The door to a run's log files: in the local run folder (the local launcher writes them
there as the nodes run), else as collected into the object store after the run."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from octotrain.errors import NotFound
from octotrain.run_layout import RunLayout
from octotrain.storage import ObjectStore


@dataclass(frozen=True)
class LogFile:
    name: str
    size: int
    modified: float
    where: str  # "run folder" or "object store"


class RunLogs:
    def __init__(self, layout: RunLayout, store: ObjectStore) -> None:
        self.layout = layout
        self.store = store
        self.prefix = f"{layout.object_prefix}/logs"

    def files(self) -> list[LogFile]:
        folder = self.layout.logs_dir
        if folder.is_dir():
            return [
                LogFile(path.name, path.stat().st_size, path.stat().st_mtime, "run folder")
                for path in sorted(folder.iterdir())
                if path.is_file()
            ]
        return [
            LogFile(info.key.rsplit("/", 1)[-1], info.size, info.modified, "object store")
            for info in self.store.list(self.prefix)
        ]

    @contextmanager
    def opened(self, name: str) -> Iterator[Path]:
        """A local path to read log file ``name`` from."""
        if name not in {log.name for log in self.files()}:
            raise NotFound(f"the run has no log file {name}")
        local = self.layout.log_path(name)
        if local.is_file():
            yield local
            return
        with tempfile.TemporaryDirectory(prefix="octotrain-log-") as scratch:
            copy = Path(scratch) / name
            self.store.get_file(f"{self.prefix}/{name}", copy)
            yield copy
