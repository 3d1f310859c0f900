"""Hang detection, as a task asks for it: a node whose training log and metrics have not
advanced for ``after_seconds`` while its process is alive is reported as hung (its sidecar log,
its launch task's Airflow log, the run view), and with ``stop_when_hung`` stopped as the time
limits stop a node (SIGTERM, the grace period to save a checkpoint, SIGKILL), failing with the
failure class ``hung`` and ``octotrain.exit_codes.HUNG_EXIT_STATUS``. The watching itself is the
node's wrapper's (``agent/hang_watch.py``). Off unless the task sets it: a training may
legitimately say nothing for long (a first epoch over a huge dataset, a compile), so only its
owner can say how long is too long.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field, StrictBool, StrictInt

from octotrain.documents import Document
from octotrain.time_limits import MAX_LIMIT_SECONDS

# The failure class of a node stopped as hung (it is its training's own, so it is not retried).
HUNG = "hung"
# The wrapper's hang report in a pod's work folder, which its sidecar syncs to the store.
HANG_REPORT_FILE = "hang.json"


class HangDetection(Document):
    """A task's ``hang_detection``: the silence that counts as a hang, and what to do then."""

    after_seconds: StrictInt = Field(ge=1, le=MAX_LIMIT_SECONDS)
    stop_when_hung: StrictBool = False


@dataclass(frozen=True)
class HungNode:
    """A node its wrapper found hung: how long it had been silent, and the task's threshold."""

    silent_seconds: float
    hang_after_seconds: float

    def in_words(self) -> str:
        return (
            f"its log and metrics did not advance for {self.silent_seconds:.0f} s while its "
            f"process was alive (hang_detection.after_seconds: {self.hang_after_seconds:g})"
        )

    @classmethod
    def from_json(cls, document: object) -> HungNode | None:
        """The wrapper's report of a hang (its exit file's ``hung``, its hang report)."""
        if not isinstance(document, dict) or "hang_after_seconds" not in document:
            return None
        return cls(float(document["silent_seconds"]), float(document["hang_after_seconds"]))


def wrapper_arguments(after_seconds: int | None, *, stop_when_hung: bool, report: str) -> list[str]:
    """The node wrapper's options for a run's hang detection, its hang report written to
    ``report`` (none when it is off)."""
    if after_seconds is None:
        return []
    stop = ["--stop-when-hung"] if stop_when_hung else []
    return ["--hang-after-seconds", str(after_seconds), *stop, "--hang-report", report]
