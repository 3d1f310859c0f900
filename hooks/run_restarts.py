"""Where the nodes of a run ask for and see the run's restarts (``octotrain.restarts``): one file
per restart in the run folder, which every node's task process shares (local launcher), or one
object per restart in the store (Kubernetes). The first request of a restart number stays, so
two nodes lost at once make one restart."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

from hooks.run_files import read_json, read_text, write_text
from octotrain.restarts import RunRestart
from octotrain.storage import ObjectStore


class LocalRunRestarts:
    """The restarts of a run whose nodes run on this machine: one file per restart in the run
    folder, which every node's task process shares (``<n>.json``, written whole)."""

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


class StoreRunRestarts:
    """The restarts of a run whose nodes run as pods: objects in the store, under the run's
    prefix, which every node's launch task and trigger read. Beside each request, the notes of
    how each node's earlier starts ended, for its supplemental log (``collect_logs`` writes it
    after the pods are gone)."""

    def __init__(self, store: ObjectStore, run_prefix: str) -> None:
        self.store = store
        self.folder = f"{run_prefix}/restarts"

    def request(self, restart: RunRestart) -> RunRestart:
        """Ask for ``restart``, unless a node asked for its number first; the one that stands.
        (Two nodes lost within the same instant may both write: each then restarts with the
        same number, which is what matters.)"""
        standing = self.requested(restart.attempt)
        if standing is not None:
            return standing
        write_text(self.store, self._key(restart.attempt), restart.to_json())
        return restart

    def requested(self, attempt: int) -> RunRestart | None:
        text = read_text(self.store, self._key(attempt))
        return None if text is None else RunRestart.from_json(text)

    def counted(self, upto: int) -> int:
        """How many of the run's restarts 1..``upto`` count against its ``max_node_restarts``
        (a restart after a preemption does not)."""
        found = (self.requested(number) for number in range(1, upto + 1))
        return sum(1 for restart in found if restart is None or restart.counted)

    def latest(self) -> int:
        """The number of the run's latest restart (0: none): what a node started now joins."""
        numbers = [
            int(name.removesuffix(".json"))
            for info in self.store.list(f"{self.folder}/")
            if (name := info.key.rsplit("/", 1)[-1]).removesuffix(".json").isdigit()
        ]
        return max(numbers, default=0)

    def note(self, node_index: str, line: str) -> None:
        """Add a line on how one start of ``node_index`` ended (only that node writes them)."""
        write_text(
            self.store,
            self._notes_key(node_index),
            json.dumps([*self.notes(node_index), line], ensure_ascii=False),
        )

    def notes(self, node_index: str) -> list[str]:
        document = read_json(self.store, self._notes_key(node_index))
        return [str(line) for line in document] if isinstance(document, list) else []

    def _key(self, attempt: int) -> str:
        return f"{self.folder}/{attempt}.json"

    def _notes_key(self, node_index: str) -> str:
        return f"{self.folder}/notes/{node_index}.json"


class RestartWatcher:
    """While a node's pod runs (a synchronous launch task), look every ``every`` seconds for
    restart number ``attempt`` of the run (None: none can come) in a thread of its own, and
    call ``on_restart`` once when a node asked for it."""

    def __init__(
        self,
        restarts: StoreRunRestarts,
        attempt: int | None,
        *,
        every: float,
        on_restart: Callable[[RunRestart], None],
    ) -> None:
        self.restarts, self.attempt, self.every = restarts, attempt, every
        self.on_restart = on_restart
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="octotrain-restart", daemon=True)

    def _watch(self) -> None:
        if self.attempt is None:
            return
        while not self._done.wait(self.every):
            try:
                restart = self.restarts.requested(self.attempt)
            except Exception:  # the store may be briefly away: look again next time
                continue
            if restart is not None:
                self.on_restart(restart)
                return

    def __enter__(self) -> RestartWatcher:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(timeout=self.every + 30)
