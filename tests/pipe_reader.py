"""A pipe drained by a thread, for what writes to a pipe descriptor (``ObjectStore.send_to``)."""

from __future__ import annotations

import os
import threading

MIB = 1024 * 1024


class PipeReader:
    """A pipe whose reading end a thread drains into ``received`` (or closes at once)."""

    def __init__(self, *, hang_up: bool = False) -> None:
        self.reading, self.writing = os.pipe()
        self.received = bytearray()
        if hang_up:
            os.close(self.reading)
            return
        self.thread = threading.Thread(target=self._drain)
        self.thread.start()

    def _drain(self) -> None:
        while chunk := os.read(self.reading, MIB):
            self.received += chunk
        os.close(self.reading)

    def finish(self) -> bytes:
        os.close(self.writing)
        self.thread.join()
        return bytes(self.received)
