"""A run's abort flag: what tells every node of a run to stop, and why.

It goes up once per run, and the first one stays: either a node failed (it names the node,
and the others are stopped because of it), or the run was stopped (by a user through
Octotrain, or by Airflow stopping a task instance), in which case the run ends ``stopped``
rather than ``failed``. Each launcher keeps it where its nodes and Airflow tasks can all see
it: a file in the run folder (local), an object in the store (Kubernetes).

A user's stop is not a failure in Airflow either: the nodes it stops end their launch tasks
skipped.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

# Why a node stops when Airflow stops its task instance (marked failed, timed out).
STOPPED_BY_AIRFLOW = "was stopped by Airflow (its task instance was stopped or timed out)"


@dataclass(frozen=True)
class AbortFlag:
    reason: str
    node: str = ""  # the node whose failure ended the run; "" when the run was stopped whole
    stopped: bool = False  # a stop, not a failure: the run ends `stopped`

    @classmethod
    def node_failed(cls, node_index: str, reason: str) -> AbortFlag:
        return cls(reason=reason[:500], node=node_index)

    @classmethod
    def stopped_by(cls, user: str) -> AbortFlag:
        return cls(reason=f"stopped by {user}", stopped=True)

    @classmethod
    def stopped_by_airflow(cls, node_index: str) -> AbortFlag:
        """Airflow stopped one node's task instance: the whole run stops."""
        return cls(reason=STOPPED_BY_AIRFLOW, node=node_index, stopped=True)

    def text(self) -> str:
        """For the supplemental logs: ``node distributed-1 failed …`` or ``stopped by alice``."""
        return f"node {self.node} {self.reason}" if self.node else self.reason

    def why_stopped(self, node_index: str, *, started: bool = True) -> str:
        """The first line of the supplemental log of ``node_index``, stopped (or, with
        ``started=False``, never started) because of this flag: who stopped it, or which
        node's end did."""
        if not self.node:  # the whole run was stopped: ``reason`` is "stopped by <user>"
            if started:
                return f"node {node_index} was {self.reason}"
            return f"node {node_index} was not started: the run was {self.reason}"
        if self.node == node_index and self.stopped:  # Airflow stopped this node itself
            return f"node {node_index} {self.reason}"
        verb = "was stopped" if started else "was not started"
        return f"node {node_index} {verb} because {self.text()}"

    @property
    def by_user(self) -> bool:
        """A user's stop through Octotrain: what it stops is skipped, not failed, in Airflow.
        Airflow stopping a task instance (``stopped_by_airflow``, which names that node) stays
        a failure there, as Airflow itself made it one."""
        return self.stopped and not self.node

    def concerns_other_than(self, node_index: str) -> bool:
        """Whether ``node_index`` is stopped by this flag (rather than having raised it by
        failing itself)."""
        return self.stopped or self.node != node_index

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> AbortFlag:
        """A flag as written by ``to_json``; anything unreadable still means: stop."""
        try:
            document = json.loads(text)
            return cls(
                reason=str(document["reason"]),
                node=str(document.get("node", "")),
                stopped=bool(document.get("stopped", False)),
            )
        except (ValueError, KeyError, TypeError):
            return cls(reason="the run is being stopped (its abort flag is unreadable)")
