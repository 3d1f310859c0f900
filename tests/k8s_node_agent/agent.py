"""A node of a real control plane whose pods are local processes: the node agent.

It registers a ``Node`` (cpu, memory and ``nvidia.com/gpu`` capacity, 127.0.0.1, its kubelet
port), renews its Lease as a kubelet's heartbeat, watches the pods the real scheduler binds to
it, and runs each with its kubelet (``tests.k8s_node_agent.kubelet.PodRuntime``: init
containers in order, native sidecars, volumes as folders, env and the downward API from the pod
spec, container paths and cluster DNS names rewritten for a process on this machine), whose
status and events go back through the API (``tests.k8s_node_agent.api_pods``). A pod deleted
with a grace period gets SIGTERM, SIGKILL at its end, and is then deleted for good (grace 0,
its uid as precondition) as a kubelet does; a pod removed at once is killed at once. Its logs
are served to the apiserver on the kubelet's port (``tests.k8s_node_agent.log_server``).

GPUs are numbers (0 to ``gpus``-1) handed to containers as ``CUDA_VISIBLE_DEVICES``, as the
NVIDIA device plugin would. Pods are not given cluster IPs: every pod is 127.0.0.1, and names
of Services and of pods under a headless Service's subdomain resolve to it (the Rewriter), which
is what a rendezvous of processes on one machine needs.

Test equipment, never a product feature.
"""

from __future__ import annotations

import json
import logging
import threading
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.k8s_control_plane import (
    GPU,
    ControlPlane,
    delete_node,
    issue_certificate,
    register_node,
    renew_lease,
    report_ready,
)
from tests.k8s_node_agent.api_pods import ApiPods
from tests.k8s_node_agent.kubelet import Disruption, PodRuntime
from tests.k8s_node_agent.log_server import LogServer
from tests.k8s_node_agent.logs import ContainerLog
from tests.k8s_node_agent.quantities import parse_quantity, pod_requests
from tests.k8s_node_agent.status import ContainerRecord

log = logging.getLogger(__name__)
HEARTBEAT_SECONDS = 2.0  # well within the plane's NODE_GRACE_SECONDS
# A watch is ended by the apiserver after this long and started again from where it was:
# also how long ``stop()`` may wait for the watch thread (a read cannot be interrupted).
WATCH_SECONDS = 2
RETRY_SECONDS = 0.5
FINISHED = ("Succeeded", "Failed")


class NodeAgent:
    """One node: ``start()`` registers it and runs what is bound to it; ``stop()`` kills every
    container and removes the node."""

    def __init__(
        self,
        plane: ControlPlane,
        name: str,
        *,
        root: Path,
        cpu: str = "16",
        memory: str = "64Gi",
        gpus: int = 0,
        memory_poll_seconds: float = 0.2,
    ) -> None:
        self.plane = plane
        self.node_name = name
        self.root = root
        self.cpu, self.memory, self.gpu_count = cpu, memory, gpus
        self.memory_poll_seconds = memory_poll_seconds
        self.port = int(urlsplit(plane.url).port or 443)  # the apiserver's, for the pods' env
        self.stopping = threading.Event()
        self._lost = False
        self._api = plane.client()
        self.store = ApiPods(self._api, name)
        self._runtimes: dict[str, PodRuntime] = {}
        self._gpus: dict[str, list[int]] = {}
        pki = plane.ca.parent
        issue_certificate(pki, f"kubelet-{name}", f"/CN=system:node:{name}", pki / "server.ext")
        self._logs = LogServer(self._find_log, cert=pki / f"kubelet-{name}.crt",
                               key=pki / f"kubelet-{name}.key", ca=plane.ca,
                               stopping=self.stopping)  # fmt: skip
        self._threads = [
            threading.Thread(target=self._watch, name=f"agent-{name}-watch", daemon=True),
            threading.Thread(target=self._heartbeat, name=f"agent-{name}-lease", daemon=True),
        ]

    def __enter__(self) -> NodeAgent:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> NodeAgent:
        self.root.mkdir(parents=True, exist_ok=True)
        self._logs.start()
        register_node(self.plane, self.node_name, cpu=self.cpu, memory=self.memory,
                      gpus=self.gpu_count, port=self._logs.port)  # fmt: skip
        self.store.start()
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        """Every container killed, the node and its Lease deleted (also those of a node that
        was lost)."""
        if self._lost:
            for thread in self._threads:
                thread.join(WATCH_SECONDS + 5)
            delete_node(self.plane, self.node_name)
            self._api.close()
            return
        self.stopping.set()
        with self.store.lock:
            runtimes = list(self._runtimes.values())
        for runtime in runtimes:
            runtime.kill()
        self.store.stop(timeout=2.0)
        self._logs.stop()
        for thread in self._threads:
            thread.join(WATCH_SECONDS + 5)
        delete_node(self.plane, self.node_name)
        self._api.close()

    def evict(self, namespace: str, name: str) -> None:
        """The kubelet evicts the pod under node pressure, as a real one does: the pod's
        ``DisruptionTarget`` (``TerminationByKubelet``), its containers stopped (SIGTERM,
        SIGKILL after the pod's grace period), and the pod kept, ``Failed`` with reason
        ``Evicted``."""
        with self.store.lock:
            runtime = next(r for r in self._runtimes.values()
                           if (r.namespace, r.name) == (namespace, name))  # fmt: skip
            pod = self.store.find("pods", namespace, name)
            grace = int((pod or {}).get("spec", {}).get("terminationGracePeriodSeconds", 30))
        message = "The node was low on resource: memory."
        runtime.disrupt(Disruption("TerminationByKubelet", message, "Evicted"), grace)

    def lose(self) -> None:
        """The machine dies: every container killed at once, no status sent any more, the
        heartbeat stopped. Its Node and pods stay in the API, for the controller-manager to
        find the node NotReady and evict them; nothing will ever confirm their end."""
        self.stopping.set()
        self.store.cut_off()
        with self.store.lock:
            runtimes = list(self._runtimes.values())
        for runtime in runtimes:
            runtime.kill()
        self._logs.stop()
        self._lost = True

    # -- what a pod's kubelet needs (tests.k8s_node_agent.kubelet.Host) -----------------------

    @property
    def allocatable_cpu(self) -> Fraction:
        return parse_quantity(self.cpu)

    def lookup(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = self._api.get(f"/api/v1/namespaces/{namespace}/{kind}/{name}")
        if found.status_code == 404:
            return None
        found.raise_for_status()
        return dict(found.json())

    def dns_domains(self, namespace: str) -> tuple[list[str], list[str]]:
        """The pod subdomains and Service names of a namespace: the names a pod there may use
        to reach another (each resolves to 127.0.0.1 here)."""
        pods = self._api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
        services = self._api.get(f"/api/v1/namespaces/{namespace}/services").json()["items"]
        subdomains = [pod["spec"].get("subdomain") or "" for pod in pods]
        return [s for s in subdomains if s], [s["metadata"]["name"] for s in services]

    def pod_finished(self, uid: str) -> None:
        """A pod ended (Succeeded or Failed): its GPUs are free again."""
        with self.store.lock:
            self._gpus.pop(uid, None)

    def pod_removed(self, uid: str) -> None:
        """A deleted pod's containers have all ended: delete it for good."""
        with self.store.lock:
            runtime = self._runtimes.pop(uid, None)
            self._gpus.pop(uid, None)
        if runtime is not None:
            self.store.remove(runtime.namespace, runtime.name, uid)

    # -- the watch --------------------------------------------------------------------------

    def _watch(self) -> None:
        """The pods bound to this node: listed, then watched from the list's version, again
        from a new list whenever the watch cannot go on (the apiserver restarted, the version
        is too old)."""
        selector = f"fieldSelector=spec.nodeName%3D{self.node_name}"
        version = ""
        while not self.stopping.is_set():
            try:
                if not version:
                    listed = self._api.get(f"/api/v1/pods?{selector}")
                    listed.raise_for_status()
                    version = self._relisted(listed.json())
                query = (f"{selector}&watch=true&allowWatchBookmarks=true"
                         f"&resourceVersion={version}&timeoutSeconds={WATCH_SECONDS}")  # fmt: skip
                with self._api.stream("GET", f"/api/v1/pods?{query}",
                                      timeout=WATCH_SECONDS + 10) as answer:  # fmt: skip
                    if answer.status_code != 200:
                        version = ""
                        continue
                    for line in answer.iter_lines():
                        if self.stopping.is_set():
                            return
                        if not line:
                            continue
                        event = json.loads(line)
                        if event["type"] == "ERROR":  # 410 Gone: list again
                            version = ""
                            break
                        version = event["object"]["metadata"]["resourceVersion"]
                        if event["type"] != "BOOKMARK":
                            self._observe(event["type"], event["object"])
            except (httpx.HTTPError, json.JSONDecodeError, KeyError) as error:
                log.info("node %s: watch interrupted: %s", self.node_name, error)
                self.stopping.wait(RETRY_SECONDS)

    def _relisted(self, listed: dict[str, Any]) -> str:
        """Take a fresh list: each pod in it observed, each pod run here but gone from it
        treated as deleted. Returns the list's version."""
        seen = {pod["metadata"]["uid"] for pod in listed["items"]}
        for pod in listed["items"]:
            self._observe("MODIFIED", pod)
        with self.store.lock:
            gone = [uid for uid in self._runtimes if uid not in seen]
        for uid in gone:
            self._gone(uid)
        return str(listed["metadata"]["resourceVersion"])

    def _observe(self, kind: str, pod: dict[str, Any]) -> None:
        metadata = pod["metadata"]
        uid = metadata["uid"]
        if kind == "DELETED":
            self._gone(uid)
            return
        with self.store.lock:
            mine = self.store.seen(pod)
            runtime = self._runtimes.get(uid)
            if runtime is None:
                if "deletionTimestamp" in metadata:
                    # Nothing of it runs here (never started, or the agent restarted).
                    self.store.remove(metadata["namespace"], metadata["name"], uid)
                    return
                if (pod.get("status") or {}).get("phase") in FINISHED:
                    return
                runtime = PodRuntime(self, mine, self._take_gpus(uid, pod))
                self._runtimes[uid] = runtime
                runtime.start()
                return
        if "deletionTimestamp" in metadata:
            runtime.delete(int(metadata.get("deletionGracePeriodSeconds") or 0))

    def _gone(self, uid: str) -> None:
        """The pod is no longer in the API (deleted at once): its containers killed now."""
        with self.store.lock:
            runtime = self._runtimes.pop(uid, None)
            self._gpus.pop(uid, None)
        if runtime is not None:
            runtime.kill()
            runtime.cleanup()
            self.store.forget(runtime.namespace, runtime.name)

    def _take_gpus(self, uid: str, pod: dict[str, Any]) -> list[int]:
        wanted = int(pod_requests(pod["spec"]).get(GPU, 0))
        held = {gpu for gpus in self._gpus.values() for gpu in gpus}
        free = [gpu for gpu in range(self.gpu_count) if gpu not in held]
        self._gpus[uid] = free[:wanted]
        return self._gpus[uid]

    # -- the rest ---------------------------------------------------------------------------

    def _heartbeat(self) -> None:
        while not self.stopping.wait(HEARTBEAT_SECONDS):
            try:
                renew_lease(self._api, self.node_name)
                report_ready(self._api, self.node_name)
            except httpx.HTTPError as error:
                log.info("node %s: lease not renewed: %s", self.node_name, error)

    def _find_log(
        self, namespace: str, name: str, container: str
    ) -> tuple[ContainerLog, ContainerRecord] | None:
        with self.store.lock:
            for runtime in self._runtimes.values():
                if (runtime.namespace, runtime.name) == (namespace, name):
                    return runtime.log_of(container)
        return None
