"""Restarting a run's nodes after one was lost (``octotrain.failure_classes.FailureClass.LOST``).

Every node of a run is started again together, from its checkpoint: a distributed training's
rendezvous needs every member, and the members that were not lost are waiting for the lost one
(or have failed for want of it). The node that saw the loss asks for restart number ``attempt``
(1, 2, …) by writing a ``RunRestart`` where every node's launcher looks (a file in the run
folder, an object in the store); the first request of a number stays, so two nodes lost at once
make one restart. Every node still running then stops its training (SIGTERM, the grace period
to save a checkpoint) and starts it again; a node that already ended well is not restarted.
At most ``max_node_restarts`` (the task's setting; 0: never) restarts per run for lost nodes;
restarts after a preemption (``FailureClass.PREEMPTED``) are not counted against it, up to
``MAX_RUN_RESTARTS`` restarts of a run in all.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace

from octotrain.failure_classes import FailureClass
from octotrain.supplemental_log import SupplementalLog

DEFAULT_MAX_NODE_RESTARTS = 2
MAX_NODE_RESTARTS = 20
# Every restart of a run, preemptions included: a run preempted this often ends failed.
MAX_RUN_RESTARTS = 50
# How a supplemental log's line on the failure class starts.
CLASS_LINE = "failure class "


@dataclass(frozen=True)
class RunRestart:
    """Restart number ``attempt`` of a run, asked for because ``node`` was lost (``reason``);
    ``counted``: against the task's ``max_node_restarts`` (not after a preemption)."""

    attempt: int
    node: str
    reason: str
    counted: bool = True

    def in_words(self, max_restarts: int, *, counted_so_far: int | None = None) -> str:
        """What was done, with the number of counted restarts so far, this one included
        (``counted_so_far``; the restart's own number when not given)."""
        if not self.counted:
            return (
                f"node {self.node} was preempted ({self.reason}): every node of the run was "
                "started again from its checkpoint once the run was admitted again (not counted "
                "against max_node_restarts)"
            )
        number = self.attempt if counted_so_far is None else counted_so_far
        return (
            f"node {self.node} was lost ({self.reason}): every node of the run was started again "
            f"from its checkpoint (restart {number} of at most {max_restarts})"
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RunRestart | None:
        """A request as written by ``to_json``; None for anything unreadable (a torn write is
        never taken for a restart)."""
        try:
            document = json.loads(text)
            return cls(int(document["attempt"]), str(document["node"]), str(document["reason"]),
                       bool(document.get("counted", True)))  # fmt: skip
        except (ValueError, KeyError, TypeError):
            return None


def restart_due(failure: FailureClass, *, attempt: int, counted: int, max_restarts: int) -> bool:
    """Whether a node that ended with ``failure`` in ``attempt`` (0: the first start), after
    ``counted`` restarts that count against ``max_restarts``, asks for the run's next restart."""
    if not failure.retried or attempt >= MAX_RUN_RESTARTS:
        return False
    return not failure.counted or counted < max_restarts


def what_was_done(failure: FailureClass, *, attempt: int, max_restarts: int) -> str:
    """The supplemental log's line on an abnormal end: its class and what came of it
    (``attempt``: the restarts counted against ``max_restarts`` before it)."""
    line = f"{CLASS_LINE}{failure}: {failure.in_words()}"
    if not failure.counted:  # not retried, or retried without counting
        return line
    if max_restarts == 0:
        return f"{line}; not restarted: the task's max_node_restarts is 0"
    if attempt >= max_restarts:
        return f"{line}; not restarted: the run's {max_restarts} restarts were all used"
    return f"{line}; restart {attempt + 1} of at most {max_restarts}"


def supplemented(log: SupplementalLog, details: tuple[str, ...]) -> SupplementalLog:
    """``log`` with ``details`` after its own lines (how the node's earlier starts ended, its
    failure class and what was done), less a class line when its own lines name its class
    already (a hang's does)."""
    named = any(line.startswith(CLASS_LINE) for line in log.details)
    extra = [line for line in details if not (named and line.startswith(CLASS_LINE))]
    return replace(log, details=(*log.details, *extra))
