"""The API server's semantics, without HTTP: create, read, list, patch and delete of pods,
services, secrets, config maps and events, pod logs, and the glue between the store, the
scheduler and the pods' kubelets. Every failure is an ``ApiError`` carrying the status code
and ``Status`` body the real API server would answer with."""

from __future__ import annotations

import base64
import copy
import itertools
import threading
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from tests.k8s_emulator.containers import MEMORY_POLL_SECONDS
from tests.k8s_emulator.kubelet import Disruption, PodRuntime
from tests.k8s_emulator.logs import LogQuery
from tests.k8s_emulator.objects import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    already_exists,
    bad_request,
    generated_name,
    invalid,
    json_patch,
    merge_patch,
    new_uid,
    rfc3339,
)
from tests.k8s_emulator.pod_security import RESTRICTED, check_pod_security
from tests.k8s_emulator.podspec import DEFAULT_GRACE_SECONDS, default_pod, validate_pod
from tests.k8s_emulator.quantities import CPU, GPU
from tests.k8s_emulator.scheduler import Node, Scheduler
from tests.k8s_emulator.schemas import check_schema
from tests.k8s_emulator.selectors import (
    fields_match,
    labels_match,
    parse_field_selector,
    parse_label_selector,
)
from tests.k8s_emulator.store import KINDS, Store, api_version

# Kinds whose DELETE answers with the deleted object (others answer with a Status).
_DELETE_RETURNS_OBJECT = {"pods", "services"}


class Cluster:
    """One control plane and one node."""

    def __init__(
        self,
        root: Path,
        node: Node,
        memory_poll_seconds: float = MEMORY_POLL_SECONDS,
        pod_security: dict[str, str] | None = None,
    ) -> None:
        self.store = Store()
        # Pod Security level by namespace (``restricted`` where none is given).
        self.pod_security = dict(pod_security or {})
        self.root = root
        self.memory_poll_seconds = memory_poll_seconds
        self.port = 0
        self.node = node
        self.node_name = node.name
        self.scheduler = Scheduler(node)
        self.stopping = threading.Event()
        self._runtimes: dict[str, PodRuntime] = {}
        self._unscheduled: dict[str, str] = {}  # uid -> last FailedScheduling message
        self._created: list[str] = []
        self._created_specs: list[dict[str, Any]] = []
        self._cluster_ips = itertools.count(10)
        self._namespaces: dict[str, dict[str, Any]] = {}
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.namespace(name)

    # -- what the kubelets need ------------------------------------------------------------

    @property
    def allocatable_cpu(self) -> Fraction:
        return self.node.capacity[CPU]

    @property
    def gpu_count(self) -> int:
        return int(self.node.capacity.get(GPU, 0))

    def lookup(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.store.find(kind, namespace, name)
        return copy.deepcopy(found) if found is not None else None

    def dns_domains(self, namespace: str) -> tuple[list[str], list[str]]:
        """The pod subdomains and the service names of a namespace: the DNS names a pod
        there may use to reach another."""
        with self.store.lock:
            pods = self.store.all("pods", namespace)
            subdomains = [p["spec"].get("subdomain") or "" for p in pods]
            services = [s["metadata"]["name"] for s in self.store.all("services", namespace)]
        return [s for s in subdomains if s], services

    def pod_finished(self, uid: str) -> None:
        """A bound pod reached Succeeded or Failed: what it held is free again."""
        with self.store.lock:
            self.scheduler.release(uid)
            self._schedule_waiting()

    def pod_removed(self, uid: str) -> None:
        with self.store.lock:
            for pod in self.store.all("pods"):
                if pod["metadata"]["uid"] == uid:
                    self.store.remove("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
            self._runtimes.pop(uid, None)
            self._unscheduled.pop(uid, None)
            self.scheduler.release(uid)
            self._schedule_waiting()

    # -- namespaces ------------------------------------------------------------------------

    def namespace(self, name: str) -> dict[str, Any]:
        """Namespaces exist as soon as they are named (no admission checks them here)."""
        with self.store.lock:
            if name not in self._namespaces:
                self._namespaces[name] = {
                    "kind": "Namespace",
                    "apiVersion": "v1",
                    "metadata": {
                        "name": name,
                        "uid": new_uid(),
                        "resourceVersion": self.store.resource_version,
                        "creationTimestamp": rfc3339(),
                        "labels": {"kubernetes.io/metadata.name": name},
                    },
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                }
            return copy.deepcopy(self._namespaces[name])

    def namespaces(self) -> list[dict[str, Any]]:
        with self.store.lock:
            return [copy.deepcopy(n) for n in self._namespaces.values()]

    # -- generic object handling -----------------------------------------------------------

    def _new_metadata(self, kind: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        metadata = dict(body.get("metadata") or {})
        if metadata.get("namespace") and metadata["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        if not metadata.get("name"):
            if not metadata.get("generateName"):
                raise invalid(
                    kind, "", "metadata.name: Required value: name or generateName is required"
                )
            metadata["name"] = generated_name(metadata["generateName"])
        pattern = DNS_LABEL if kind == "services" else DNS_SUBDOMAIN
        limit = 63 if kind == "services" else 253
        if kind != "events" and (
            not pattern.match(metadata["name"]) or len(metadata["name"]) > limit
        ):
            raise invalid(
                kind, metadata["name"], f'metadata.name: Invalid value: "{metadata["name"]}"'
            )
        if self.store.find(kind, namespace, metadata["name"]) is not None:
            raise already_exists(kind, metadata["name"])
        metadata.update(namespace=namespace, uid=new_uid(), creationTimestamp=rfc3339())
        metadata.pop("resourceVersion", None)
        metadata.pop("deletionTimestamp", None)
        self.namespace(namespace)
        return metadata

    def create(self, kind: str, namespace: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format")
        if kind == "pods":
            return self.create_pod(namespace, body)
        with self.store.lock:
            obj = copy.deepcopy(body)
            obj["kind"], obj["apiVersion"] = KINDS[kind], api_version(kind)
            check_schema(obj)
            obj["metadata"] = self._new_metadata(kind, namespace, obj)
            if kind == "services":
                self._default_service(obj)
            elif kind == "secrets":
                self._default_secret(obj)
            elif kind == "events" and not obj.get("involvedObject"):
                raise invalid(kind, obj["metadata"]["name"], "involvedObject: Required value")
            return copy.deepcopy(self.store.put(kind, obj))

    def _default_service(self, service: dict[str, Any]) -> None:
        spec = service.setdefault("spec", {})
        name = service["metadata"]["name"]
        for index, port in enumerate(spec.get("ports") or []):
            if not isinstance(port.get("port"), int):
                raise invalid("services", name, f"spec.ports[{index}].port: Required value")
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port["port"])
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if spec.get("clusterIP") != "None":
            number = next(self._cluster_ips)
            spec["clusterIP"] = f"10.96.{number // 250}.{number % 250 + 1}"
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        service["status"] = {"loadBalancer": {}}

    @staticmethod
    def _default_secret(secret: dict[str, Any]) -> None:
        data = dict(secret.get("data") or {})
        for key, value in (secret.pop("stringData", None) or {}).items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        secret["data"] = data
        secret.setdefault("type", "Opaque")

    def read(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        with self.store.lock:
            return copy.deepcopy(self.store.get(kind, namespace, name))

    def list(
        self,
        kind: str,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, kind)
        return [
            obj
            for obj in self.store.all(kind, namespace)
            if labels_match(labels, obj) and fields_match(fields, obj)
        ]

    def patch(
        self, kind: str, namespace: str, name: str, patch: Any, content_type: str
    ) -> dict[str, Any]:
        with self.store.lock:
            current = self.store.get(kind, namespace, name)
            if "json-patch" in content_type:
                if not isinstance(patch, list):
                    raise bad_request(
                        "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
                    )
                patched = json_patch(current, patch)
            elif isinstance(patch, dict):
                patched = merge_patch(current, patch)
            else:
                raise bad_request("the body of the request was in an unknown format")
            if kind == "pods":
                self._check_pod_update(current, patched)
            check_schema(patched)
            for key in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"):
                if key in current["metadata"]:
                    patched["metadata"][key] = current["metadata"][key]
            current.clear()
            current.update(patched)
            self.store.touch(current)
            return copy.deepcopy(current)

    @staticmethod
    def _check_pod_update(current: dict[str, Any], patched: dict[str, Any]) -> None:
        """A pod's spec cannot change (beyond what the emulator does not model) and its
        status is not written through the pod itself."""
        patched["status"] = current.get("status", {})
        changed = {
            k for k in current["spec"] if current["spec"].get(k) != patched.get("spec", {}).get(k)
        }
        changed |= set(patched.get("spec", {})) - set(current["spec"])
        if changed - {"activeDeadlineSeconds", "tolerations"}:
            raise invalid(
                "pods",
                current["metadata"]["name"],
                "spec: Forbidden: pod updates may not change fields other than "
                "`spec.containers[*].image`, `spec.initContainers[*].image`, "
                "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing "
                "tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if "
                "it was previously negative)",
            )

    def delete(
        self, kind: str, namespace: str, name: str, grace_seconds: int | None = None
    ) -> dict[str, Any]:
        if kind == "pods":
            return self.delete_pod(namespace, name, grace_seconds)
        with self.store.lock:
            obj = copy.deepcopy(self.store.get(kind, namespace, name))
            self.store.remove(kind, namespace, name)
        if kind in _DELETE_RETURNS_OBJECT:
            return obj
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": name, "kind": kind, "uid": obj["metadata"]["uid"]},
        }

    # -- pods ------------------------------------------------------------------------------

    def create_pod(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("kind", "Pod") != "Pod":
            raise bad_request(f"the kind {body.get('kind')!r} does not match Pod")
        with self.store.lock:
            pod = copy.deepcopy(body)
            pod["kind"], pod["apiVersion"] = "Pod", "v1"
            check_schema(pod)
            pod["metadata"] = self._new_metadata("pods", namespace, pod)
            validate_pod(pod)
            check_pod_security(pod, self.pod_security.get(namespace, RESTRICTED))
            pod["spec"].pop("nodeName", None)
            default_pod(pod)
            self.store.put("pods", pod)
            self._created.append(pod["metadata"]["name"])
            self._created_specs.append(copy.deepcopy(pod["spec"]))
            created = copy.deepcopy(pod)
            self._unscheduled[pod["metadata"]["uid"]] = ""
            self._schedule_waiting()
            return created

    def created_pod_names(self) -> list[str]:
        with self.store.lock:
            return list(self._created)

    def created_pod_specs(self) -> list[dict[str, Any]]:
        with self.store.lock:
            return copy.deepcopy(self._created_specs)

    def _schedule_waiting(self) -> None:
        """Try to bind every pod still waiting for the node, oldest first (store lock held)."""
        if self.stopping.is_set():
            return
        for pod in self.store.all("pods"):
            uid = pod["metadata"]["uid"]
            if uid not in self._unscheduled or pod["metadata"].get("deletionTimestamp"):
                continue
            stored = self.store.get("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
            binding, message = self.scheduler.try_bind(uid, stored["spec"])
            if binding is None:
                if message != self._unscheduled[uid]:
                    self._unscheduled[uid] = message
                    stored["status"]["conditions"] = [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "lastProbeTime": None,
                            "lastTransitionTime": rfc3339(),
                            "reason": "Unschedulable",
                            "message": message,
                        }
                    ]
                    self.store.touch(stored)
                    self.store.record_event(
                        stored,
                        "FailedScheduling",
                        message,
                        warning=True,
                        component="default-scheduler",
                    )
                continue
            del self._unscheduled[uid]
            stored["spec"]["nodeName"] = self.node_name
            self.store.touch(stored)
            self.store.record_event(
                stored,
                "Scheduled",
                f"Successfully assigned {stored['metadata']['namespace']}/"
                f"{stored['metadata']['name']} to {self.node_name}",
                component="default-scheduler",
            )
            runtime = PodRuntime(self, stored, binding)
            self._runtimes[uid] = runtime
            runtime.start()

    def delete_pod(self, namespace: str, name: str, grace_seconds: int | None) -> dict[str, Any]:
        with self.store.lock:
            pod = self.store.get("pods", namespace, name)
            if grace_seconds is None:
                grace_seconds = pod["spec"].get(
                    "terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS
                )
            if grace_seconds < 0:
                raise invalid("pods", name, "gracePeriodSeconds: Invalid value: must be >= 0")
            uid = pod["metadata"]["uid"]
            runtime = self._runtimes.get(uid)
            metadata = pod["metadata"]
            if "deletionTimestamp" not in metadata or grace_seconds < metadata.get(
                "deletionGracePeriodSeconds", grace_seconds
            ):
                metadata["deletionTimestamp"] = rfc3339(time.time() + grace_seconds)
                metadata["deletionGracePeriodSeconds"] = grace_seconds
                self.store.touch(pod)
            answer = copy.deepcopy(pod)
            if runtime is None or not runtime.has_running_containers or grace_seconds == 0:
                self.pod_removed(uid)
            if runtime is not None:
                runtime.delete(grace_seconds)
            return answer

    def disrupt_pod(
        self, namespace: str, name: str, disruption: Disruption, grace_seconds: int | None
    ) -> None:
        """End a bound pod from outside (``PodRuntime.disrupt``): kept and failed when the
        disruption says so (the kubelet's eviction), else deleted with its grace period."""
        with self.store.lock:
            pod = self.store.get("pods", namespace, name)
            runtime = self._runtimes.get(pod["metadata"]["uid"])
            if grace_seconds is None:
                grace_seconds = pod["spec"].get(
                    "terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS
                )
        if runtime is None:
            raise ValueError(f"pod {namespace}/{name} is not running on the node")
        runtime.disrupt(disruption, grace_seconds)
        if not disruption.status_reason:
            self.delete_pod(namespace, name, grace_seconds)

    def lose_node(self, *, keep_pods: bool) -> None:
        """The node is gone at once (its machine died): every container is killed without a
        grace period, and every pod bound to it is failed (``keep_pods``: kept, status reason
        ``NodeLost``) or deleted by the pod garbage collector; a new node of the same
        capacity then takes the next pods."""
        with self.store.lock:
            runtimes = list(self._runtimes.values())
        for runtime in runtimes:
            message = f"Node {self.node_name} which was running pod {runtime.name} is lost"
            if keep_pods:
                runtime.disrupt(Disruption("DeletionByPodGC", message, "NodeLost"), 0)
            else:
                runtime.disrupt(Disruption("DeletionByPodGC", message), 0)
                runtime.kill()
                self.pod_removed(runtime.uid)

    def pod_log(
        self,
        namespace: str,
        name: str,
        container: str | None,
        query: LogQuery,
        *,
        follow: bool = False,
        previous: bool = False,
    ) -> bytes | Iterator[bytes]:
        with self.store.lock:
            pod = self.store.get("pods", namespace, name)
            uid = pod["metadata"]["uid"]
            spec = pod["spec"]
            regular = [c["name"] for c in spec["containers"]]
            init = [c["name"] for c in spec.get("initContainers") or []]
            if not container:
                if len(regular) != 1:
                    message = (
                        f"a container name must be specified for pod {name}, choose one of: "
                        f"[{' '.join(regular)}]"
                    )
                    if init:
                        message += f" or one of the init containers: [{' '.join(init)}]"
                    raise bad_request(message)
                container = regular[0]
            if container not in regular + init:
                raise bad_request(f"container {container} is not valid for pod {name}")
            runtime = self._runtimes.get(uid)
            found = runtime.log_of(container) if runtime else None
            if found is None or found[1].state == "waiting":
                reason = found[1].waiting_reason if found else "ContainerCreating"
                if reason in ("ErrImagePull", "ImagePullBackOff"):
                    reason = "trying and failing to pull image"
                raise bad_request(
                    f'container "{container}" in pod "{name}" is waiting to start: {reason}'
                )
            if previous:
                raise bad_request(
                    f'previous terminated container "{container}" in pod "{name}" not found'
                )
            log = found[0]
        if not follow:
            return log.read(query)

        def cancelled() -> bool:
            return self.stopping.is_set()

        return log.follow(query, cancelled)

    # -- stopping --------------------------------------------------------------------------

    def kill_everything(self) -> None:
        """SIGKILL every container of every pod (the emulator stops)."""
        self.stopping.set()
        with self.store.lock:
            runtimes = list(self._runtimes.values())
        for runtime in runtimes:
            runtime.kill()
        with self.store.changed:
            self.store.changed.notify_all()
