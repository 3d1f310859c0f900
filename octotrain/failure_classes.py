"""Failure classes: why a node ended abnormally, as far as retrying it goes.

A node lost for reasons outside its training (its pod evicted, its Kubernetes node
lost, the worker that ran it lost, an image pull or the object store briefly failing) is
``LOST``: it is started again from its checkpoint, with every other node of its run, up to the
task's ``max_node_restarts`` (``octotrain.restarts``). A run preempted for other work (by the
scheduler for a pod of higher priority, or by its queue, Kueue, which evicts the whole run and
admits it again later) is ``PREEMPTED``: started again the same way, but not counted against
``max_node_restarts``, as a preemption says nothing of the run itself. A training that failed on
its own (a non-zero exit, out of memory, a command that cannot run, bad input), reached a time
limit, hung or was stopped is not: starting it again would end the same way, or undo a decision.

The classification reads what each launcher knows of a node's end: the pod as the Kubernetes API
shows it (a dict in the API's shape, as ``octotrain.pod_diagnosis`` reads it), or the local
process's end (``local_end_class``).
"""

from __future__ import annotations

import re
import signal
from enum import StrEnum
from typing import Any

from octotrain.exit_codes import HUNG_EXIT_STATUS
from octotrain.hang_detection import HUNG

# A pod condition Kubernetes adds before it deletes or fails a pod for a disruption (eviction
# by the API or for node pressure, preemption by a higher priority, the node's taint or loss).
DISRUPTION_TARGET = "DisruptionTarget"
# The condition Kueue adds to the pods of a workload it stops before it deletes them, and its
# reason when the workload was evicted (preempted, or otherwise sent back to its queue).
TERMINATION_TARGET = "TerminationTarget"
# The (condition, reason) pairs which mean the pod was preempted for other work: by the
# scheduler (a pod of higher priority), or by its queue (Kueue).
PREEMPTIONS = {
    (DISRUPTION_TARGET, "PreemptionByScheduler"),
    (TERMINATION_TARGET, "WorkloadEvicted"),  # and every WorkloadEvictedDueTo… of Kueue's
}
LOSS_CONDITIONS = (DISRUPTION_TARGET, TERMINATION_TARGET)
# The pod's status reasons of a kubelet's eviction and of a node that stopped answering.
EVICTED = "Evicted"
NODE_LOST = "NodeLost"
# Waiting reasons of an image pull that failed, and the words of its message that say the
# registry or the network failed for a while (not a wrong name, a missing tag or credentials).
PULL_REASONS = {"ErrImagePull", "ImagePullBackOff"}
TRANSIENT_PULL_WORDS = (
    "timeout", "timed out", "connection refused", "connection reset", "no route to host",
    "temporary failure", "too many requests", "service unavailable", "bad gateway",
    "internal server error", "eof",
)  # fmt: skip
TRAIN_CONTAINER = "base"
# How the object store says it gave up on an operation after its retries
# (``hooks/storage/s3_store``): unreachable for a while, not bad input.
STORE_UNAVAILABLE = re.compile(r"cannot .+ at \S+ after \d+ attempts|cut off \d+ times")
# The exit status of a process killed by a signal is above this (128 + the signal).
SIGNAL_EXIT_BASE = 128
# A training killed by SIGKILL that no stop and no kill at its memory limit explains was killed
# from outside it (another program, a person, the machine's own out-of-memory killer): as
# outside the training as a lost worker, so its class is the same.
SIGKILLED = {SIGNAL_EXIT_BASE + signal.SIGKILL, -signal.SIGKILL}


class FailureClass(StrEnum):
    """Each abnormal end's class; ``retried`` says whether the node is started again."""

    LOST = "lost"  # outside the training: evicted, node or worker lost
    PREEMPTED = "preempted"  # for other work: by the scheduler, or by its queue (Kueue)
    TRAINING = "training"  # the training exited non-zero on its own
    OUT_OF_MEMORY = "out_of_memory"
    START = "start"  # it could not start: a command or image that cannot run, bad input
    TIME_LIMIT = "time_limit"
    HUNG = HUNG  # stopped as hung by its wrapper (``octotrain.hang_detection``)
    STOPPED = "stopped"  # by its user, Airflow, or another node's failure

    @property
    def retried(self) -> bool:
        return self in (FailureClass.LOST, FailureClass.PREEMPTED)

    @property
    def counted(self) -> bool:
        """Whether a restart for it counts against the task's ``max_node_restarts``."""
        return self is FailureClass.LOST

    def in_words(self) -> str:
        """What the node's supplemental log says of the class."""
        return _WORDS[self]

    def causes(self) -> str:
        """What ends a node with this class, on either launcher: the docs' table of failure
        classes is made from it, so a class added here without its causes fails the docs'
        build."""
        return _CAUSES[self]


_WORDS = {
    FailureClass.LOST: "the node was lost for a reason outside its training",
    FailureClass.PREEMPTED: (
        "the run was preempted for other work; it is started again from its checkpoint once it "
        "is admitted again (not counted against max_node_restarts)"
    ),
    FailureClass.TRAINING: "the training failed on its own (not retried)",
    FailureClass.OUT_OF_MEMORY: "the training ran out of memory (not retried)",
    FailureClass.START: "the node could not start its training (not retried)",
    FailureClass.TIME_LIMIT: "a time limit stopped it (not retried)",
    FailureClass.HUNG: "stopped as hung (not retried: a hang is the training's own)",
    FailureClass.STOPPED: "stopped (not retried)",
}

# What ends a node with each class, as the pod's status or the local process's end shows it
# (``pod_end_class``, ``local_end_class``).
_CAUSES = {
    FailureClass.PREEMPTED: (
        "Kubernetes: the pod preempted for other work, by the scheduler for a pod of higher "
        "priority or by its queue (Kueue evicts the whole run and admits it again later): its "
        "`DisruptionTarget` condition's reason `PreemptionByScheduler`, or Kueue's "
        "`TerminationTarget` with a reason starting `WorkloadEvicted`"
    ),
    FailureClass.LOST: (
        "Kubernetes: the pod evicted (its `DisruptionTarget` condition, or reason `Evicted` or "
        "`NodeLost`), deleted before its end could be read, its node lost, an image pull that "
        "failed for the moment (a timeout, a refused connection, a 5xx), data preparation that "
        "found the object store unreachable after its retries. Local: the node's process killed "
        "by a signal from outside before its wrapper could report (a person, a shutdown). Both: "
        "the training killed by SIGKILL that neither a stop nor a kill at its memory limit "
        "explains (another program, a person, the machine's own out-of-memory killer)"
    ),
    FailureClass.TRAINING: "the training exited non-zero on its own",
    FailureClass.OUT_OF_MEMORY: (
        "the training killed at its memory limit (Kubernetes' `OOMKilled`; locally the memory "
        "cgroup's `oom_kill` event, or an allocation that failed at `RLIMIT_AS`)"
    ),
    FailureClass.START: (
        "its command or image cannot run, its data preparation failed (bad input), or its pod "
        "never started (still `Pending`, as when it waited for resources past "
        "`max_wait_seconds`)"
    ),
    FailureClass.TIME_LIMIT: (
        "its `max_training_seconds` (its wrapper stops the training), or on Kubernetes the "
        "pod's `activeDeadlineSeconds`, the backstop"
    ),
    FailureClass.HUNG: "its wrapper stopped it as hung (`hang_detection.stop_when_hung`)",
    FailureClass.STOPPED: (
        "a stop: by its user, by Airflow (a task instance marked failed, a timeout), or "
        "because another node of the run failed"
    ),
}


def pod_loss(pod: dict[str, Any]) -> str | None:
    """Why the pod was lost for a reason outside its training, in words; None when it was not.

    Kubernetes says so in three ways: the ``DisruptionTarget`` condition (API eviction,
    preemption, node pressure, taint manager, pod garbage collection after a node loss; Kueue's
    ``TerminationTarget`` when it stops a workload), the
    status reason ``Evicted`` (kubelet) or ``NodeLost``, and an image pull that failed for a
    network or registry error of the moment (a timeout, a refused connection, a 5xx)."""
    status = pod.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") in LOSS_CONDITIONS and condition.get("status") == "True":
            reason = condition.get("reason") or condition["type"]
            return f"{reason}: {condition.get('message', '')}".rstrip(": ")
    reason = str(status.get("reason") or "")
    if reason in (EVICTED, NODE_LOST):
        return f"{reason}: {status.get('message', '')}".rstrip(": ")
    for container in [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]:
        waiting = (container.get("state") or {}).get("waiting") or {}
        message = str(waiting.get("message", ""))
        if waiting.get("reason") in PULL_REASONS and _transient(message):
            return f"{waiting['reason']} (transient): {message}"
    return None


def preempted(pod: dict[str, Any]) -> bool:
    """Whether the pod's conditions say it was preempted for other work."""
    return any(
        condition.get("status") == "True"
        and any(condition.get("type") == kind and str(condition.get("reason", "")).startswith(
            reason) for kind, reason in PREEMPTIONS)
        for condition in (pod.get("status") or {}).get("conditions") or []
    )  # fmt: skip


def _transient(message: str) -> bool:
    lowered = message.lower()
    return any(word in lowered for word in TRANSIENT_PULL_WORDS)


def pod_end_class(
    pod: dict[str, Any] | None,
    *,
    stopped: bool,
    time_limited: bool,
    hung: bool = False,
    staging_error: str | None = None,
) -> FailureClass:
    """The class of a pod's abnormal end. ``stopped``: the run's abort flag or Airflow stopped
    it; ``time_limited``: a time limit did (the wrapper's report or the pod's deadline);
    ``hung``: its wrapper stopped it as hung (its exit report says so; its training container's
    exit status ``HUNG_EXIT_STATUS`` backs that up when the report never reached the store);
    ``staging_error``: why its data preparation failed, as its init log says. A pod that is
    gone without a word (deleted by someone, its node gone and collected) is lost, and so is
    one whose data preparation found the object store unreachable."""
    if stopped:
        return FailureClass.STOPPED
    if time_limited:
        return FailureClass.TIME_LIMIT
    if pod is None:
        return FailureClass.LOST
    if pod_loss(pod) is not None:
        return FailureClass.PREEMPTED if preempted(pod) else FailureClass.LOST
    if _init_failed(pod):  # data preparation: its own log says why (bad input, a store error)
        unreachable = staging_error is not None and STORE_UNAVAILABLE.search(staging_error)
        return FailureClass.LOST if unreachable else FailureClass.START
    terminated = _train_terminated(pod)
    if terminated is None:
        return FailureClass.START if _phase(pod) in ("Pending", None) else FailureClass.LOST
    if hung or terminated.get("exitCode") == HUNG_EXIT_STATUS:
        return FailureClass.HUNG
    if terminated.get("reason") == "OOMKilled":
        return FailureClass.OUT_OF_MEMORY
    if terminated.get("reason") in ("StartError", "ContainerCannotRun"):
        return FailureClass.START
    if terminated.get("exitCode") in SIGKILLED:
        return FailureClass.LOST
    return FailureClass.TRAINING


def local_end_class(
    *,
    exit_code: int,
    wrapper_reported: bool,
    stopped: bool,
    out_of_memory: bool,
    time_limited: bool,
    hung: bool,
    start_error: bool,
) -> FailureClass:
    """The class of a local node's abnormal end. The node's wrapper writes its exit report
    whenever the training ends, whatever its exit; a wrapper killed by a signal before it wrote
    one (with its process group, from outside: a person, a shutdown) stands for a lost node, as
    on a cluster, and so does a training killed by SIGKILL that neither a stop nor its memory
    limit (``out_of_memory``: the cgroup's ``oom_kill`` event) explains."""
    if stopped:
        return FailureClass.STOPPED
    if start_error:
        return FailureClass.START
    if time_limited:
        return FailureClass.TIME_LIMIT
    if hung:
        return FailureClass.HUNG
    if out_of_memory:
        return FailureClass.OUT_OF_MEMORY
    if not wrapper_reported and exit_code > SIGNAL_EXIT_BASE:
        return FailureClass.LOST
    if exit_code in SIGKILLED:
        return FailureClass.LOST
    return FailureClass.TRAINING


def _train_terminated(pod: dict[str, Any]) -> dict[str, Any] | None:
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        if container.get("name") == TRAIN_CONTAINER:
            return (container.get("state") or {}).get("terminated") or None
    return None


def _init_failed(pod: dict[str, Any]) -> bool:
    for container in (pod.get("status") or {}).get("initContainerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated") or {}
        if terminated and terminated.get("exitCode", 0) != 0:
            return True
    return False


def _phase(pod: dict[str, Any]) -> str | None:
    return (pod.get("status") or {}).get("phase")
