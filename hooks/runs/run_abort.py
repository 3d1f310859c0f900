"""The abort flag (``octotrain.abort_flags``) of a run, among its files (``RunFiles``): the
nodes' processes and the Airflow tasks that watch them read it where the launcher keeps the
run's files (the run folder they share, or the store when they share no disk)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from octotrain.abort_flags import AbortFlag
from octotrain.run_files import RunFiles, read_json, read_text, write_json

log = logging.getLogger(__name__)


class RunAbortMarker:
    def __init__(self, files: RunFiles) -> None:
        self.files = files
        self.objects = files.objects

    def raise_flag(self, flag: AbortFlag) -> None:
        """The first flag stays: it names the node that ended the run, or the stop."""
        self.files.create(self.objects.abort_flag, flag.to_json().encode("utf-8"))

    def flag(self) -> AbortFlag | None:
        text = read_text(self.files, self.objects.abort_flag)
        return None if text is None else AbortFlag.from_json(text)

    def reason(self) -> str | None:
        """Why the run is being stopped, or None while it is not."""
        flag = self.flag()
        return None if flag is None else flag.text()

    def record_stop(self, node_index: str, because: str) -> None:
        """Node ``node_index`` is being stopped (or was never started): ``because`` is the
        first line of its supplemental log (``AbortFlag.why_stopped``), kept apart as a node
        that ended by itself before the flag went up was not stopped."""
        write_json(self.files, self.objects.stop_record(node_index), {"because": because})

    def stopped_because(self, node_index: str) -> str | None:
        document = read_json(self.files, self.objects.stop_record(node_index))
        return None if document is None else str(document["because"])


class AbortWatcher:
    """While a node runs, look at the run's abort flag every ``every`` seconds in a thread of
    its own and call ``on_flag`` once when it goes up (a stop, or another node's failure);
    ``on_look``, if given, at each look while it is down (a hang's notices)."""

    def __init__(
        self,
        marker: RunAbortMarker,
        *,
        every: float,
        on_flag: Callable[[AbortFlag], None],
        on_look: Callable[[], None] | None = None,
    ) -> None:
        self.marker, self.every, self.on_flag, self.on_look = marker, every, on_flag, on_look
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="octotrain-abort", daemon=True)

    def _watch(self) -> None:
        while not self._done.wait(self.every):
            try:
                flag = self.marker.flag()
            except Exception:  # the store may be briefly away: look again next time
                continue
            if flag is not None:
                self.on_flag(flag)
                return
            if self.on_look is not None:
                try:
                    self.on_look()
                except Exception:  # a look that failed must not end the watch of the flag
                    log.exception("the look beside the abort flag failed")

    def __enter__(self) -> AbortWatcher:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(timeout=self.every + 30)
