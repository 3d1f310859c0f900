"""Pod status as the kubelet reports it: container states, the pod phase (the kubelet's
``getPhase`` for ``restartPolicy: Never``, with native sidecars) and the pod conditions,
computed from what the node agent's kubelet knows about each container."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from tests.k8s_node_agent.timestamps import rfc3339

LOOPBACK = "127.0.0.1"


@dataclass
class ContainerRecord:
    """What the kubelet knows about one container."""

    name: str
    image: str
    init: bool
    sidecar: bool = False  # an init container with restartPolicy Always (a native sidecar)
    waiting_reason: str = "ContainerCreating"
    waiting_message: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str | None = None
    message: str | None = None
    container_id: str = ""
    gpu_ids: list[int] = field(default_factory=list)

    @property
    def state(self) -> str:
        if self.exit_code is not None:
            return "terminated"
        return "running" if self.started_at is not None else "waiting"

    def start(self, now: float) -> None:
        self.started_at = now
        self.container_id = f"containerd://{secrets.token_hex(32)}"

    def terminate(self, now: float, exit_code: int, reason: str, message: str | None) -> None:
        self.finished_at = now
        self.exit_code = exit_code
        self.reason = reason
        self.message = message or None
        if self.started_at is None:
            self.started_at = now
            self.container_id = self.container_id or f"containerd://{secrets.token_hex(32)}"

    def to_status(self) -> dict[str, Any]:
        state: dict[str, Any]
        if self.state == "terminated":
            assert self.started_at is not None and self.finished_at is not None
            terminated: dict[str, Any] = {
                "exitCode": self.exit_code,
                "reason": self.reason,
                "startedAt": rfc3339(self.started_at),
                "finishedAt": rfc3339(self.finished_at),
                "containerID": self.container_id,
            }
            if self.message:
                terminated["message"] = self.message
            state = {"terminated": terminated}
        elif self.state == "running":
            assert self.started_at is not None
            state = {"running": {"startedAt": rfc3339(self.started_at)}}
        else:
            waiting: dict[str, Any] = {"reason": self.waiting_reason}
            if self.waiting_message:
                waiting["message"] = self.waiting_message
            state = {"waiting": waiting}
        status: dict[str, Any] = {
            "name": self.name,
            "image": self.image,
            "imageID": _image_id(self.image) if self.started_at is not None else "",
            "ready": self.state == "running" and (self.sidecar or not self.init),
            "restartCount": 0,
            "started": self.state == "running",
            "state": state,
            "lastState": {},
        }
        if self.container_id:
            status["containerID"] = self.container_id
        return status


def _image_id(image: str) -> str:
    import hashlib

    return f"{image.split('@')[0]}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def pod_phase(init: list[ContainerRecord], regular: list[ContainerRecord]) -> str:
    """The phase of a scheduled pod with ``restartPolicy: Never`` semantics. A native
    sidecar counts once it has started, whatever its exit code; the pod is not over while
    one still runs (the kubelet stops them once the main containers have ended)."""
    for record in init:
        if record.sidecar:
            if record.state == "waiting":
                return "Pending"
            continue
        if record.state == "terminated" and record.exit_code != 0:
            return "Failed"
        if record.state != "terminated":
            return "Pending"
    states = [record.state for record in regular]
    if "waiting" in states:
        return "Pending"
    if "running" in states or any(r.sidecar and r.state == "running" for r in init):
        return "Running"
    return "Succeeded" if all(r.exit_code == 0 for r in regular) else "Failed"


@dataclass
class Conditions:
    """Pod conditions with the time each last changed."""

    _current: dict[str, tuple[str, str | None, str | None, float]] = field(default_factory=dict)

    def set(
        self,
        kind: str,
        status: bool,
        now: float,
        reason: str | None = None,
        message: str | None = None,
    ) -> None:
        value = "True" if status else "False"
        previous = self._current.get(kind)
        changed_at = previous[3] if previous and previous[0] == value else now
        self._current[kind] = (value, reason, message, changed_at)

    def to_list(self) -> list[dict[str, Any]]:
        order = [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
            "DisruptionTarget",
        ]
        conditions = []
        for kind in order:
            if kind not in self._current:
                continue
            value, reason, message, changed_at = self._current[kind]
            condition: dict[str, Any] = {
                "type": kind,
                "status": value,
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(changed_at),
            }
            if reason:
                condition["reason"] = reason
            if message:
                condition["message"] = message
            conditions.append(condition)
        return conditions


def update_conditions(
    conditions: Conditions,
    phase: str,
    init: list[ContainerRecord],
    regular: list[ContainerRecord],
    now: float,
) -> None:
    """The conditions of a scheduled pod, from its containers."""
    conditions.set("PodScheduled", True, now)
    sandbox_up = phase not in ("Succeeded", "Failed")
    conditions.set(
        "PodReadyToStartContainers", sandbox_up or any(r.started_at for r in regular), now
    )
    incomplete = [
        r.name
        for r in init
        if not (r.sidecar and r.started_at) and not (r.state == "terminated" and r.exit_code == 0)
    ]
    if incomplete:
        conditions.set(
            "Initialized", False, now, "ContainersNotInitialized",
            f"containers with incomplete status: [{' '.join(incomplete)}]",
        )  # fmt: skip
    else:
        conditions.set("Initialized", True, now)
    if phase in ("Succeeded", "Failed"):
        for kind in ("Ready", "ContainersReady"):
            conditions.set(kind, False, now, "PodCompleted")
        return
    unready = [r.name for r in regular if r.state != "running"]
    for kind in ("Ready", "ContainersReady"):
        if unready:
            conditions.set(
                kind, False, now, "ContainersNotReady",
                f"containers with unready status: [{' '.join(unready)}]",
            )  # fmt: skip
        else:
            conditions.set(kind, True, now)
