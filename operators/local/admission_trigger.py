"""The trigger a local node's ``launch`` task defers to while its run waits for admission
(``hooks.local.local_admission``): the wait holds no worker slot, only a coroutine in Airflow's
triggerer, so that waiting runs never keep admitted ones from their slots.

It reads the run's claim every ``poll_seconds`` and fires once the run is admitted or is no
longer active (stopped while it waited: the task then finds the run's abort flag), but never
sooner than ``hold_seconds`` after it began. Airflow 3.3's scheduler fails a task whose resumed
attempt is already running when the executor's word that the deferring attempt's process ended
("success") reaches it late (apache/airflow#71580, #72716; seen with the embedded default's
LocalExecutor, 5 s late on a busy 2-core machine, when a sweep's trials took turns on its
cores); the hold lets that word arrive while the task is still deferred, where Airflow ignores
it. It costs a run only when its room came sooner than that. Node 0's
trigger also settles the claims every ``settle_seconds``, so that room freed by a run that
ended without a word (a worker lost) is given again; a node's end and a run's request settle
at once by themselves. The catalog's calls are blocking, so they run in a thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from hooks.local import local_admission

# How often the claim is read while the run waits: at most this long between room and start.
POLL_SECONDS = 1.0
# How often node 0's trigger settles the claims itself (see the module's docstring).
SETTLE_SECONDS = 5.0
# The least a trigger waits before it fires (see the module's docstring).
HOLD_SECONDS = 8.0

log = logging.getLogger(__name__)


class RunAdmissionTrigger(BaseTrigger):
    """Fires ``{"run_id": …}`` once catalog run ``run_id`` is admitted or has ended."""

    def __init__(
        self,
        *,
        run_id: int,
        settles: bool,
        poll_seconds: float = POLL_SECONDS,
        settle_seconds: float = SETTLE_SECONDS,
        hold_seconds: float = HOLD_SECONDS,
    ) -> None:
        super().__init__()
        self.run_id = run_id
        self.settles = settles
        self.poll_seconds = poll_seconds
        self.settle_seconds = settle_seconds
        self.hold_seconds = hold_seconds

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "run_id": self.run_id,
                "settles": self.settles,
                "poll_seconds": self.poll_seconds,
                "settle_seconds": self.settle_seconds,
                "hold_seconds": self.hold_seconds,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        settled, began = 0.0, time.monotonic()
        while True:
            if self.settles and time.monotonic() - settled >= self.settle_seconds:
                settled = time.monotonic()
                try:
                    await asyncio.to_thread(local_admission.settle)
                except Exception:  # the next look tries again; the wait goes on
                    log.warning("settling the admission claims failed", exc_info=True)
            if await asyncio.to_thread(local_admission.may_go_on, self.run_id):
                await asyncio.sleep(max(0.0, began + self.hold_seconds - time.monotonic()))
                yield TriggerEvent({"run_id": self.run_id})
                return
            await asyncio.sleep(self.poll_seconds)
