"""A run's abort flag: what tells every node of a run to stop, and why.

It goes up once per run, and the first one stays: either a node failed (it names the node,
and the others are stopped because of it), or the run was stopped (by a user through
Octotrain, or by Airflow stopping a task instance), in which case the run ends ``stopped``
rather than ``failed``. Each launcher keeps it where its nodes and Airflow tasks can all see
it: a file in the run folder (local), an object in the store (Kubernetes).

Airflow 3 knows no stopped state: the nodes a user's stop ends fail their launch tasks, saying
who stopped them, so that the DAG run ends failed (not a green success), and the DAG run gets a
note saying who stopped it and when (``stop_note``). The catalog's message says it in a line
(``AbortFlag.stop_summary``): "Stopped by alice at 2026-12-06 09:08:43 after 39 of 100 steps".
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from octotrain.node_progress import RunProgress

# Why a node stops when Airflow stops its task instance (marked failed, timed out).
STOPPED_BY_AIRFLOW = "was stopped by Airflow (its task instance was stopped or timed out)"
# The most a DAG run's note holds in Airflow's metadata DB (``dag_run_note.content``).
AIRFLOW_NOTE_MAX_CHARS = 1000


@dataclass(frozen=True)
class AbortFlag:
    reason: str
    node: str = ""  # the node whose failure ended the run; "" when the run was stopped whole
    stopped: bool = False  # a stop, not a failure: the run ends `stopped`
    at: str = ""  # when a user asked for the stop (ISO 8601, UTC); "" for any other flag
    pruned: bool = False  # a sweep's pruner stopped the trial: the run ends `pruned`

    @classmethod
    def node_failed(cls, node_index: str, reason: str) -> AbortFlag:
        return cls(reason=reason[:500], node=node_index)

    @classmethod
    def stopped_by(cls, user: str, *, at: datetime | None = None) -> AbortFlag:
        """``user``'s stop, asked for ``at`` (now when not given)."""
        asked = (at or datetime.now(UTC)).astimezone(UTC)
        return cls(reason=f"stopped by {user}", stopped=True, at=asked.isoformat())

    @classmethod
    def pruned_by(
        cls, sweep: str, *, trial: int, step: int, at: datetime | None = None
    ) -> AbortFlag:
        """Sweep ``sweep``'s pruner stopped trial ``trial`` after its objective at ``step``."""
        asked = (at or datetime.now(UTC)).astimezone(UTC)
        reason = f"pruned by sweep {sweep} (trial {trial}, at step {step})"
        return cls(reason=reason, stopped=True, pruned=True, at=asked.isoformat())

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
        """A user's stop through Octotrain (not Airflow stopping a task instance, which
        names that node)."""
        return self.stopped and not self.node

    def stop_summary(self, progress: RunProgress | None) -> str:
        """The run's message for a user's stop, in a line: who, when, and how far its least
        advanced node had got ("after 39 of 100 steps"), as far as those are known; a sweep's
        pruning says the step of its objective it was judged at instead."""
        said = self.reason[:1].upper() + self.reason[1:]
        if self.at:
            said += f" at {datetime.fromisoformat(self.at):%Y-%m-%d %H:%M:%S}"
        if self.pruned:  # its reason names the step its objective was judged at
            return said
        trained = [
            node for node in (progress.nodes if progress else []) if node.current is not None
        ]
        if trained:
            behind = min(trained, key=lambda node: node.current or 0.0)
            total = f" of {_number_text(behind.total)}" if behind.total else ""
            said += f" after {_number_text(behind.current)}{total} steps"
        elif progress is not None:
            said += " before its training reported any progress"
        return said

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
                at=str(document.get("at", "")),
                pruned=bool(document.get("pruned", False)),
            )
        except (ValueError, KeyError, TypeError):
            return cls(reason="the run is being stopped (its abort flag is unreadable)")


def stop_note(*, user: str, at: datetime) -> str:
    """The note a user's stop leaves on the run's DAG run in Airflow (which renders it as
    Markdown). Airflow 3 knows no stopped state, and a stop shown as a green success would
    hide it: the run ends ``failed`` there, its launch tasks failed saying who stopped them and
    ``archive_model`` upstream-failed, so the note says it was a stop, by whom and when."""
    return (
        f"**Stopped by {user}** at {at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC through "
        "Octotrain. Airflow has no stopped state, so this run shows as failed: its nodes' launch "
        "tasks were stopped (their logs kept by collect_logs) and no model version was "
        "archived. Octotrain shows it as stopped."
    )


def _number_text(value: float | None) -> str:
    """A progress count as a person writes it: 39, not 39.0."""
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def appended_note(earlier: str | None, note: str) -> str:
    """``note`` after a DAG run's ``earlier`` note, which a person may have written and is
    kept, shortened if need be to fit Airflow's limit."""
    if not earlier:
        return note
    room = AIRFLOW_NOTE_MAX_CHARS - len(note) - 2
    kept = earlier if len(earlier) <= room else earlier[: max(room - 1, 0)] + "…"
    return f"{kept}\n\n{note}"
