"""The emulator's etcd: every object by kind, namespace and name, one lock for all of them
(the API handlers, the kubelet threads and the scheduler all change pods), a resource version
that grows with every write, and a condition that wakes watchers and log followers."""

from __future__ import annotations

import copy
import itertools
import threading
import time
from typing import Any

from tests.k8s_emulator.objects import new_uid, not_found, rfc3339

# The kinds the emulator keeps, by their resource (URL) name.
KINDS = {
    "pods": "Pod",
    "services": "Service",
    "events": "Event",
    "secrets": "Secret",
    "configmaps": "ConfigMap",
    "networkpolicies": "NetworkPolicy",
}
# The API version of the kinds outside the core group (served under ``/apis/<group>/<version>``).
GROUP_VERSIONS = {"networkpolicies": "networking.k8s.io/v1"}


def api_version(kind: str) -> str:
    """The ``apiVersion`` of a kind, by its resource name."""
    return GROUP_VERSIONS.get(kind, "v1")


class Store:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self._objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {k: {} for k in KINDS}
        self._version = itertools.count(1)
        self._latest = 0
        self._event_sequence = itertools.count(1)

    @property
    def resource_version(self) -> str:
        return str(self._latest)

    def _bump(self, obj: dict[str, Any]) -> None:
        self._latest = next(self._version)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self._latest)
        self.changed.notify_all()

    def put(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store (create or replace) an object; it gets a new resource version."""
        with self.lock:
            metadata = obj["metadata"]
            self._bump(obj)
            self._objects[kind][(metadata["namespace"], metadata["name"])] = obj
            return obj

    def touch(self, obj: dict[str, Any]) -> None:
        """Record that a stored object was changed in place."""
        with self.lock:
            self._bump(obj)

    def find(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            return self._objects[kind].get((namespace, name))

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        """The stored object itself (not a copy); 404 ``ApiError`` when there is none."""
        found = self.find(kind, namespace, name)
        if found is None:
            raise not_found(kind, name)
        return found

    def remove(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            removed = self._objects[kind].pop((namespace, name), None)
            if removed is not None:
                self._latest = next(self._version)
                self.changed.notify_all()
            return removed

    def all(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Copies of the objects of a kind (in one namespace, or all), oldest first."""
        with self.lock:
            return [
                copy.deepcopy(obj)
                for (ns, _), obj in self._objects[kind].items()
                if namespace is None or ns == namespace
            ]

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
        """An event about a pod, as the kubelet or the scheduler records it."""
        with self.lock:
            metadata = pod["metadata"]
            now = time.time()
            involved = {
                "kind": "Pod",
                "namespace": metadata["namespace"],
                "name": metadata["name"],
                "uid": metadata["uid"],
                "apiVersion": "v1",
                "resourceVersion": metadata.get("resourceVersion", ""),
            }
            if field_path:
                involved["fieldPath"] = field_path
            host = pod.get("spec", {}).get("nodeName")
            source = {"component": component, **({"host": host} if host else {})}
            name = f"{metadata['name']}.{time.time_ns():x}{next(self._event_sequence):04x}"
            event = {
                "kind": "Event",
                "apiVersion": "v1",
                "metadata": {
                    "name": name,
                    "namespace": metadata["namespace"],
                    "uid": new_uid(),
                    "creationTimestamp": rfc3339(now),
                },
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "source": source,
                "firstTimestamp": rfc3339(now),
                "lastTimestamp": rfc3339(now),
                "count": 1,
                "type": "Warning" if warning else "Normal",
                "eventTime": None,
                "reportingComponent": component,
                "reportingInstance": host or "",
            }
            self.put("events", event)
