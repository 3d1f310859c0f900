"""The node agent's view of its pods, in the shape its kubelet (``PodRuntime``) was
written against (``find``, ``touch``, ``record_event`` under ``lock``), backed by a real
apiserver: pods come from the agent's watch, and what the kubelet writes (a pod's status, an
event) is sent by one writer thread, in order, so a slow request never holds the lock.

A pod's status is sent as a strategic merge patch of ``pods/<name>/status`` (conditions merge
by type, as the real kubelet's status manager patches them); a status written again before the
last one was sent replaces it, so only the newest is sent.
"""

from __future__ import annotations

import copy
import logging
import secrets
import threading
import time
from collections import OrderedDict
from typing import Any

import httpx

from tests.k8s_control_plane import rfc3339_now

log = logging.getLogger(__name__)
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
# How long a write waits before it is tried again when the apiserver does not answer (it may
# be restarting); the write is kept until it is sent or its pod is gone.
RETRY_SECONDS = 0.5

Key = tuple[str, str]  # namespace, name


class ApiPods:
    """The pods bound to one node, and the writes of its kubelet."""

    def __init__(self, api: httpx.Client, node: str) -> None:
        self.lock = threading.RLock()
        self._api = api
        self._node = node
        self._pods: dict[Key, dict[str, Any]] = {}
        # What waits to be sent, in order: ("status", key) or ("event", body) or ("delete", key).
        self._queue: OrderedDict[tuple[str, Any], dict[str, Any]] = OrderedDict()
        self._wake = threading.Condition(self.lock)
        self._stopping = False
        self._cut = False  # cut off: nothing is sent any more
        self._writer = threading.Thread(target=self._write, name=f"agent-{node}-writer",
                                        daemon=True)  # fmt: skip

    def start(self) -> None:
        self._writer.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Send what is queued (for at most ``timeout`` seconds), then stop."""
        deadline = time.monotonic() + timeout
        with self._wake:
            while self._queue and time.monotonic() < deadline:
                self._wake.wait(0.1)
            self._stopping = True
            self._wake.notify_all()
        self._writer.join(timeout)

    def cut_off(self) -> None:
        """Nothing more is sent, whatever is queued or comes (the machine died)."""
        with self._wake:
            self._stopping = self._cut = True
            self._queue.clear()
            self._wake.notify_all()

    # -- what the watch tells ---------------------------------------------------------------

    def seen(self, pod: dict[str, Any]) -> dict[str, Any]:
        """The pod as the watch gives it; its status stays the kubelet's own once the kubelet
        has written one. Returns the agent's copy."""
        metadata = pod["metadata"]
        key = (metadata["namespace"], metadata["name"])
        with self.lock:
            known = self._pods.get(key)
            if known is None or known["metadata"]["uid"] != metadata["uid"]:
                self._pods[key] = copy.deepcopy(pod)
            else:
                known["metadata"] = copy.deepcopy(metadata)
                known["spec"] = copy.deepcopy(pod["spec"])
            return self._pods[key]

    def forget(self, namespace: str, name: str) -> None:
        with self.lock:
            self._pods.pop((namespace, name), None)

    def all(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self._pods.values())

    # -- what the kubelet reads and writes (its store's interface) -----------------

    def find(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        assert kind == "pods", kind
        return self._pods.get((namespace, name))

    def touch(self, pod: dict[str, Any]) -> None:
        """Send the pod's status (the newest, once)."""
        metadata = pod["metadata"]
        key = (metadata["namespace"], metadata["name"])
        body = {"metadata": {"uid": metadata["uid"]}, "status": copy.deepcopy(pod["status"])}
        with self._wake:
            self._queue.pop(("status", key), None)
            if not self._cut:
                self._queue[("status", key)] = body
            self._wake.notify_all()

    def record_event(
        self,
        pod: dict[str, Any],
        reason: str,
        message: str,
        *,
        warning: bool = False,
        component: str = "kubelet",
        field_path: str | None = None,
    ) -> None:
        """An event about the pod, as the kubelet records one."""
        metadata = pod["metadata"]
        involved = {"kind": "Pod", "apiVersion": "v1", "namespace": metadata["namespace"],
                    "name": metadata["name"], "uid": metadata["uid"]}  # fmt: skip
        if field_path:
            involved["fieldPath"] = field_path
        now = rfc3339_now()
        name = f"{metadata['name']}.{time.time_ns():x}{secrets.token_hex(2)}"
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": metadata["namespace"]},
            "involvedObject": involved, "reason": reason, "message": message,
            "source": {"component": component, "host": self._node},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "type": "Warning" if warning else "Normal",
            "reportingComponent": component, "reportingInstance": self._node,
        }  # fmt: skip
        with self._wake:
            if not self._cut:
                self._queue[("event", name)] = event
            self._wake.notify_all()

    def remove(self, namespace: str, name: str, uid: str) -> None:
        """Delete the pod for good once its containers have ended (the kubelet's last word:
        grace period 0, only if it is still this pod)."""
        with self._wake:
            if not self._cut:
                self._queue[("delete", (namespace, name))] = {"uid": uid}
            self._wake.notify_all()

    # -- the writer -------------------------------------------------------------------------

    def _write(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._stopping:
                    self._wake.wait()
                if not self._queue or self._cut:
                    return
                (kind, key), body = next(iter(self._queue.items()))
            try:
                self._send(kind, key, body)
            except httpx.HTTPError as error:  # the apiserver away: try again
                log.info("node %s: %s %s not sent yet: %s", self._node, kind, key, error)
                time.sleep(RETRY_SECONDS)
                if not self._stopping:
                    continue
            with self._wake:
                if self._queue.get((kind, key)) is body:
                    del self._queue[(kind, key)]
                self._wake.notify_all()

    def _send(self, kind: str, key: Any, body: dict[str, Any]) -> None:
        if kind == "event":
            answer = self._api.post(f"/api/v1/namespaces/{body['metadata']['namespace']}/events",
                                    json=body)  # fmt: skip
        elif kind == "status":
            namespace, name = key
            answer = self._api.patch(f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                                     json=body, headers=STRATEGIC)  # fmt: skip
        else:
            namespace, name = key
            options = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                       "preconditions": {"uid": body["uid"]}}  # fmt: skip
            answer = self._api.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}",
                                       json=options)  # fmt: skip
        if answer.status_code >= 500:
            raise httpx.HTTPStatusError("server error", request=answer.request, response=answer)
        if answer.status_code >= 400 and answer.status_code not in (404, 409):
            log.warning("node %s: %s %s refused: %s", self._node, kind, key, answer.text)
