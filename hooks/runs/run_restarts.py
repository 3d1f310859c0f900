"""Where the nodes of a run ask for and see the run's restarts (``octotrain.restarts``): one
file per restart among the run's files (``RunFiles``: the run folder every node's task process
shares, or the store, which every pod's launch task and trigger read). The first request of a
restart number stays, so two nodes lost at once make one restart."""

from __future__ import annotations

import threading
from collections.abc import Callable

from octotrain.restarts import RunRestart
from octotrain.run_files import RunFiles, read_json, read_text, write_json


class RunRestarts:
    """The restarts of a run, and beside each node the notes of how its earlier starts ended,
    for its supplemental log (written after its pods are gone, on Kubernetes)."""

    def __init__(self, files: RunFiles) -> None:
        self.files = files
        self.objects = files.objects

    def request(self, restart: RunRestart) -> RunRestart:
        """Ask for ``restart``, unless a node asked for its number first; the one that stands."""
        self.files.create(self.objects.restart(restart.attempt), restart.to_json().encode())
        return self.requested(restart.attempt) or restart

    def requested(self, attempt: int) -> RunRestart | None:
        """Restart number ``attempt``, if a node asked for it."""
        text = read_text(self.files, self.objects.restart(attempt))
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
            for info in self.files.list(self.objects.restarts)
            if (name := info.key.rsplit("/", 1)[-1]).removesuffix(".json").isdigit()
        ]
        return max(numbers, default=0)

    def note(self, node_index: str, line: str) -> None:
        """Add a line on how one start of ``node_index`` ended (only that node writes them)."""
        write_json(self.files, self.objects.restart_notes(node_index),
                   [*self.notes(node_index), line])  # fmt: skip

    def notes(self, node_index: str) -> list[str]:
        document = read_json(self.files, self.objects.restart_notes(node_index))
        return [str(line) for line in document] if isinstance(document, list) else []


class RestartWatcher:
    """While a node's pod runs (a synchronous launch task), look every ``every`` seconds for
    restart number ``attempt`` of the run (None: none can come) in a thread of its own, and
    call ``on_restart`` once when a node asked for it."""

    def __init__(
        self,
        restarts: RunRestarts,
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
