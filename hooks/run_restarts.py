"""Where the nodes of a local run ask for and see the run's restarts (``octotrain.restarts``):
one file per restart in the run folder, which every node's task process shares. The first
request of a restart number stays (created exclusively), so two nodes lost at once make one
restart."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from octotrain.restarts import RunRestart


class LocalRunRestarts:
    def __init__(self, run_dir: Path) -> None:
        self.folder = run_dir / "restarts"

    def request(self, restart: RunRestart) -> RunRestart:
        """Ask for ``restart``; the request that stands for its number (this one, or the one
        another node made first)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = self.folder / f".{restart.attempt}.partial-{os.getpid()}"
        partial.write_text(restart.to_json(), encoding="utf-8")
        with contextlib.suppress(FileExistsError):
            os.link(partial, self._path(restart.attempt))  # atomic, and whole once there
        partial.unlink()
        return self.requested(restart.attempt) or restart

    def requested(self, attempt: int) -> RunRestart | None:
        """Restart number ``attempt``, if a node asked for it."""
        try:
            return RunRestart.from_json(self._path(attempt).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def _path(self, attempt: int) -> Path:
        return self.folder / f"{attempt}.json"
