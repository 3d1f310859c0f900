"""Why a node's pod ended abnormally, in plain words, for its supplemental log
(``octopus-train-{id}-{index}-supplemental.logs``).

It reads the pod as the Kubernetes API shows it (a dict in the API's shape) and the pod's
events: a container's exit code and its meaning, ``OOMKilled`` with the memory limit and the
last sampled usage, scheduling failures (not enough GPUs …), image pull errors with the image
name, a start that timed out, eviction, and a stop (by a user, or because another node failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from octotrain.exit_codes import describe_exit_code

MIB = 1024 * 1024
TRAIN_CONTAINER = "base"
IMAGE_PULL_REASONS = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName"}


@dataclass(frozen=True)
class NodeEnd:
    """What the supplemental log needs to know beside the pod."""

    node_index: str
    memory_limit_mib: int
    last_memory_bytes: int | None = None
    stopped_because: str | None = None
    startup_timeout_seconds: int = 0


def diagnose(pod: dict[str, Any] | None, events: list[dict[str, Any]], end: NodeEnd) -> str | None:
    """The supplemental log's text, or None when the node ended normally."""
    lines = _explain(pod, events, end)
    if not lines:
        return None
    return "\n".join([f"abnormal end of node {end.node_index}", *lines]) + "\n"


def _explain(pod: dict[str, Any] | None, events: list[dict[str, Any]], end: NodeEnd) -> list[str]:
    if end.stopped_because:
        lines = [f"node {end.node_index} was stopped: {end.stopped_because}"]
        return lines + _terminated_lines(pod, end, stopped=True)
    if pod is None:
        return [f"node {end.node_index}: its pod was never created or is gone"]
    status = pod.get("status") or {}
    if str(status.get("reason", "")) == "Evicted":
        return [f"the pod was evicted by Kubernetes: {status.get('message', '')}".rstrip()]
    if status.get("phase") == "Succeeded":
        return []
    if status.get("phase") in ("Pending", None):
        return _not_started(pod, events, end)
    return _terminated_lines(pod, end, stopped=False) or [
        f"the pod ended in phase {status.get('phase')}: {status.get('message', '')}".rstrip()
    ]


def _not_started(pod: dict[str, Any], events: list[dict[str, Any]], end: NodeEnd) -> list[str]:
    status = pod.get("status") or {}
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
    if not any("could not be pulled" in line for line in lines):
        for event in events:
            if event.get("reason") == "Failed" and "pull" in str(event.get("message", "")).lower():
                lines.append(f"image pull failed: {event.get('message', '')}")
    wait = f" within {end.startup_timeout_seconds}s" if end.startup_timeout_seconds else ""
    return [f"the pod did not start{wait}", *lines]


def _terminated_lines(pod: dict[str, Any] | None, end: NodeEnd, *, stopped: bool) -> list[str]:
    if pod is None:
        return []
    status = pod.get("status") or {}
    lines = []
    for container in status.get("initContainerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated") or {}
        if terminated and terminated.get("exitCode", 0) != 0:
            lines.append(
                f"data preparation (init container {container.get('name')}) failed with exit "
                f"code {terminated.get('exitCode')}; see the init log"
            )
    for container in status.get("containerStatuses") or []:
        if container.get("name") != TRAIN_CONTAINER:
            continue
        terminated = (container.get("state") or {}).get("terminated") or {}
        if not terminated or (terminated.get("exitCode", 0) == 0 and not stopped):
            continue
        code = int(terminated.get("exitCode", 0))
        if terminated.get("reason") == "OOMKilled":
            used = (
                f"; the last sample used {end.last_memory_bytes / MIB:.0f} MiB"
                if end.last_memory_bytes is not None
                else ""
            )
            lines.append(
                f"OOMKilled: the training used more than its memory limit of "
                f"{end.memory_limit_mib} MiB and was killed (exit code {code}){used}"
            )
        else:
            lines.append(f"exit code {code}: {describe_exit_code(code)}")
    return lines


def _statuses(status: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
