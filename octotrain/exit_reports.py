"""A node's exit report: how its training ended, as the wrapper that ran it wrote it
(``agent/run_training.py``, which imports nothing of Octotrain and writes plain JSON), read
here once for every reader: the local launcher's node process, a pod's sidecar, the collect
stage and the supplemental log's diagnosis."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from octotrain.hang_detection import HungNode
from octotrain.time_limits import ReachedLimit


class ExitReport(BaseModel):
    """What the wrapper said: the training's exit status (None: no word, the node was stopped
    before its training ended), why its command could not start, the grace period after which
    it had to be killed, the time limit or the hang that stopped it."""

    model_config = ConfigDict(frozen=True)

    exit_status: int | None = None
    start_error: str | None = None
    killed_after_grace_seconds: float | None = None
    time_limit: dict[str, Any] | None = None
    hung: dict[str, Any] | None = None

    @classmethod
    def parse(cls, text: str | None) -> ExitReport:
        """The report in ``text``; an empty one for no file or a torn one (the wrapper was
        killed while writing it)."""
        if not text:
            return cls()
        try:
            return cls.model_validate_json(text)
        except ValidationError:
            return cls()

    @property
    def reached_limit(self) -> ReachedLimit | None:
        return ReachedLimit.from_json(self.time_limit)

    @property
    def hung_node(self) -> HungNode | None:
        return HungNode.from_json(self.hung)

    @property
    def stopped_by_wrapper(self) -> bool:
        """The wrapper stopped the training itself: its time limit, or a hang."""
        return self.time_limit is not None or self.hung is not None

    def document(self) -> dict[str, Any]:
        """The report as the wrapper wrote it (what the store keeps)."""
        return self.model_dump(exclude_unset=True)
