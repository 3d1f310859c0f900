"""Pods left behind by their Kubernetes node: deleted, but never gone.

When a node stops answering (its machine died, its kubelet crashed, the network split), the
controller-manager marks it NotReady and, once the pods' toleration of that runs out, deletes
its pods with their grace period. Only the node's kubelet can confirm such a deletion, so the
pods stay, "Terminating", for as long as the node is away: the launcher would follow them
forever. A pod still there well after the time its deletion gave it
(``metadata.deletionTimestamp``) is left behind: the launcher deletes it at once (grace 0,
as ``kubectl delete --force`` does, and as the pod garbage collector does for a node marked
out of service) and treats it as lost, which restarts the run from its checkpoints
(``octotrain.failure_classes``)."""

from __future__ import annotations

from datetime import datetime, timedelta

# How much longer than its deletion gave it a pod may take to be gone before it is taken for
# left behind: a working kubelet ends a pod within its grace period, and reports it at once.
LEFT_BEHIND_MARGIN = timedelta(seconds=30)
# How often a followed pod is looked at for this (it needs a read of the pod).
LEFT_BEHIND_CHECK_SECONDS = 10.0


def left_behind(deletion_timestamp: datetime | None, *, now: datetime) -> bool:
    """Whether a pod whose deletion is due at ``deletion_timestamp`` (None: not deleted) has
    been left behind by its node by ``now``."""
    return deletion_timestamp is not None and now > deletion_timestamp + LEFT_BEHIND_MARGIN


def left_behind_message(name: str, deletion_timestamp: datetime) -> str:
    return (
        f"pod {name} was to be gone by {deletion_timestamp.isoformat()} but is still there: "
        "its Kubernetes node no longer answers; deleting it at once"
    )
