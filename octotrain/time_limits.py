"""A run's time limits: how long its nodes may wait for resources (``max_wait_seconds``: a pod
pending, unschedulable) and how long each may train (``max_training_seconds``, from the start of
its training command). A task sets them, a run's conf may change them
(docs/concepts/limits-retries-hangs.md).

On the training limit the node's wrapper sends the training SIGTERM, leaves it the stop's grace
period to save a checkpoint, then kills it; the node fails, saying which limit fired, and the
run can be resumed from that checkpoint. On Kubernetes the pod's own ``activeDeadlineSeconds``
backs it up (the limit, plus the time the pod may take to start, plus the grace period), and
the wait limit is the launch operator's schedule timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_LIMIT_SECONDS = 30 * 24 * 3600
WAIT_LIMIT = "max_wait_seconds"
TRAINING_LIMIT = "max_training_seconds"
# The exit status of a node's wrapper whose training reached its time limit (as `timeout`'s):
# the node fails even when the training, stopped, exited 0.
TIME_LIMIT_EXIT_STATUS = 124


def time_limit_rule(seconds: int | None) -> int | None:
    """A time limit is a whole number of seconds from 1 to 30 days, or null for none."""
    if seconds is not None and not 1 <= seconds <= MAX_LIMIT_SECONDS:
        raise ValueError(
            f"must be a whole number of seconds from 1 to {MAX_LIMIT_SECONDS} (30 days), or "
            f"null for no limit; got {seconds}"
        )
    return seconds


@dataclass(frozen=True)
class ReachedLimit:
    """A time limit that fired: which, and how many seconds it was."""

    name: str
    seconds: float

    def in_words(self) -> str:
        what = "waited for resources" if self.name == WAIT_LIMIT else "trained"
        return f"it {what} for more than {self.seconds:g} s ({self.name})"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "seconds": self.seconds}

    @classmethod
    def from_json(cls, document: object) -> ReachedLimit | None:
        if not isinstance(document, dict) or "name" not in document:
            return None
        return cls(str(document["name"]), float(document["seconds"]))


def active_deadline_seconds(
    max_training_seconds: int, *, startup_seconds: int, grace_seconds: int
) -> int:
    """The pod's own deadline (Kubernetes counts it from the pod's start, staging and image
    pull included): the training limit, the time the pod may take to start, and the grace
    period, so that it fires only when the wrapper could not stop the training itself."""
    return max_training_seconds + startup_seconds + grace_seconds
