"""Why a node's pod ended abnormally, in plain words, for its supplemental log
(``octopus-train-{id}-{index}-supplemental.logs``), whose first line says why.

It reads the pod as the Kubernetes API shows it (a dict in the API's shape), the pod's events,
the training wrapper's report (``exits/<node>.json``: its exit status, why its command could not
be run, a kill after the grace period) and the init log: scheduling failures (not enough GPUs
…), image pull and container creation errors, a container the runtime could not start, a
failed staging, an eviction, and what the local launcher reports too (an exit code and its
meaning, ``OOMKilled`` with the memory limit and the last sampled usage, a stop, by whom),
worded by ``octotrain.supplemental_log``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from octotrain.exit_reports import ExitReport
from octotrain.supplemental_log import (
    MemoryExhaustion,
    NodeEnding,
    SupplementalLog,
    explain,
    resume_hint,
    staging_error_in,
)
from octotrain.time_limits import TRAINING_LIMIT, WAIT_LIMIT, ReachedLimit

TRAIN_CONTAINER = "base"
IMAGE_PULL_REASONS = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName"}
CREATE_REASONS = {"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}
START_FAILURES = {"StartError", "ContainerCannotRun"}


@dataclass(frozen=True)
class NodeEnd:
    """What the supplemental log needs to know beside the pod: ``stop_reason`` is the full
    first line of a stop (``AbortFlag.why_stopped``), ``exit_report`` what the wrapper said."""

    node_index: str
    memory_limit_mib: int
    last_memory_bytes: int | None = None
    stop_reason: str | None = None
    startup_timeout_seconds: int = 0
    exit_report: ExitReport = field(default_factory=ExitReport)
    init_log: str = ""
    # The run's time limits (octotrain.time_limits); None: none.
    max_wait_seconds: int | None = None
    max_training_seconds: int | None = None
    # The pod's own deadline (activeDeadlineSeconds), backing up the training limit.
    active_deadline_seconds: int | None = None
    # Whether the node's checkpoint is in the object store (a resume would restore it).
    checkpoint_synced: bool = False
    # The end of the node's train log, its secrets masked (``NodeEnding.train_log_tail``).
    train_log_tail: str = ""


def diagnose(
    pod: dict[str, Any] | None, events: list[dict[str, Any]], end: NodeEnd
) -> SupplementalLog | None:
    """The supplemental log, or None when the node ended normally."""
    node = f"node {end.node_index}"
    status = (pod or {}).get("status") or {}
    if end.stop_reason is not None:
        return explain(_ending(end, _train_exit_code(status)))
    if pod is None:
        if end.exit_report.exit_status is not None:  # the pod is gone: the wrapper's word
            return explain(_ending(end, None))
        return SupplementalLog(
            f"{node} ended without a trace: its pod was never created or is gone"
        )
    if str(status.get("reason", "")) == "DeadlineExceeded" and end.max_training_seconds:
        return _deadline_exceeded(node, end)
    if str(status.get("reason", "")) == "Evicted":
        message = f"{node} was evicted by Kubernetes: {status.get('message', '')}"
        return SupplementalLog(message.rstrip())
    if status.get("phase") == "Succeeded":
        return None
    if status.get("phase") in ("Pending", None):
        return _not_started(node, status, events, end)
    return _terminated(node, status, end)


def _ending(end: NodeEnd, train_exit_code: int | None, **facts: Any) -> NodeEnding:
    """The node's end from the pod's training container and the wrapper's report."""
    report = end.exit_report
    code = train_exit_code if train_exit_code is not None else report.exit_status
    return NodeEnding(
        end.node_index,
        exit_code=code,
        stop_reason=end.stop_reason,
        start_error=report.start_error,
        killed_after_grace_seconds=report.killed_after_grace_seconds,
        time_limit=report.reached_limit,
        hung=report.hung_node,
        checkpoint_synced=end.checkpoint_synced,
        train_log_tail=end.train_log_tail,
        **facts,
    )


def _deadline_exceeded(node: str, end: NodeEnd) -> SupplementalLog:
    """Kubernetes ended the pod at its ``activeDeadlineSeconds``: the wrapper could not stop
    the training at its limit (it was still starting, or the wrapper itself hung)."""
    limit = ReachedLimit(TRAINING_LIMIT, float(end.max_training_seconds or 0))
    deadline = f"{end.active_deadline_seconds} s" if end.active_deadline_seconds else "its deadline"
    return SupplementalLog(
        f"{node} reached its time limit: {limit.in_words()}; Kubernetes ended its pod at the "
        f"pod's deadline (activeDeadlineSeconds, {deadline}: the limit, the time to start and "
        "the grace period)",
        (resume_hint(end.checkpoint_synced),),
    )


def _terminated(node: str, status: dict[str, Any], end: NodeEnd) -> SupplementalLog | None:
    for container in status.get("initContainerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated") or {}
        if terminated and terminated.get("exitCode", 0) != 0:
            staging_error = staging_error_in(end.init_log)
            if staging_error is not None:
                return explain(NodeEnding(end.node_index, staging_error=staging_error))
            return SupplementalLog(
                f"{node} did not start: data preparation (init container "
                f"{container.get('name')}) failed with exit code {terminated.get('exitCode')}; "
                "see the init log"
            )
    phase = f"{node} ended abnormally: its pod ended in phase {status.get('phase')}: "
    phase = (phase + str(status.get("message", ""))).rstrip(": ")
    terminated = _train_terminated(status)
    if terminated is None:  # the API may lag behind the wrapper's report
        reported = end.exit_report.exit_status is not None
        return (explain(_ending(end, None)) if reported else None) or SupplementalLog(phase)
    code = int(terminated.get("exitCode", 0))
    reason = terminated.get("reason")
    if reason in START_FAILURES:
        why = f"the container runtime could not run it ({reason}): {terminated.get('message', '')}"
        return explain(NodeEnding(end.node_index, start_error=why.rstrip(": ")))
    if reason == "OOMKilled":
        exhausted = MemoryExhaustion(end.memory_limit_mib, "OOMKilled", end.last_memory_bytes)
        return explain(_ending(end, code, out_of_memory=exhausted))
    log = explain(_ending(end, code))
    if log is None and status.get("phase") == "Failed":  # the training succeeded, the pod not
        return SupplementalLog(phase)
    return log


def _not_started(
    node: str, status: dict[str, Any], events: list[dict[str, Any]], end: NodeEnd
) -> SupplementalLog:
    lines = []
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            lines.append(
                f"the pod could not be scheduled ({condition.get('reason', 'Unschedulable')}): "
                f"{condition.get('message', '')}".rstrip()
            )
    for event in events:
        if event.get("reason") == "FailedScheduling" and not lines:
            lines.append(f"FailedScheduling: {event.get('message', '')}")
    for container in _statuses(status):
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in IMAGE_PULL_REASONS:
            lines.append(
                f"the image {container.get('image', '')} of container {container.get('name')} "
                f"could not be pulled ({waiting['reason']}): {waiting.get('message', '')}"
            )
        elif waiting.get("reason") in CREATE_REASONS:
            lines.append(
                f"the container {container.get('name')} could not be created "
                f"({waiting['reason']}): {waiting.get('message', '')}"
            )
    if not any("could not be pulled" in line for line in lines):
        for event in events:
            if event.get("reason") == "Failed" and "pull" in str(event.get("message", "")).lower():
                lines.append(f"image pull failed: {event.get('message', '')}")
    unschedulable = any("could not be scheduled" in line or "FailedScheduling" in line
                        for line in lines)  # fmt: skip
    if end.max_wait_seconds and unschedulable:
        limit = ReachedLimit(WAIT_LIMIT, float(end.max_wait_seconds)).in_words()
        return SupplementalLog(f"{node} did not start: {limit}: {lines[0]}", tuple(lines[1:]))
    wait = f" within {end.startup_timeout_seconds}s" if end.startup_timeout_seconds else ""
    if not lines:
        return SupplementalLog(f"{node} did not start{wait}")
    return SupplementalLog(f"{node} did not start{wait}: {lines[0]}", tuple(lines[1:]))


def _train_terminated(status: dict[str, Any]) -> dict[str, Any] | None:
    for container in status.get("containerStatuses") or []:
        if container.get("name") == TRAIN_CONTAINER:
            terminated = (container.get("state") or {}).get("terminated")
            return terminated or None
    return None


def _train_exit_code(status: dict[str, Any]) -> int | None:
    terminated = _train_terminated(status)
    return None if terminated is None else int(terminated.get("exitCode", 0))


def _statuses(status: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
