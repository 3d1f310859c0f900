"""``KubernetesEmulator``: a loopback Kubernetes API server with one node whose containers are
processes on this machine. See the package docstring for what is emulated and how."""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from typing import Any

import yaml

from tests.k8s_emulator.cluster import Cluster
from tests.k8s_emulator.containers import MEMORY_POLL_SECONDS
from tests.k8s_emulator.kubelet import Disruption
from tests.k8s_emulator.scheduler import Node
from tests.k8s_emulator.server import ApiHttpServer, ApiRequest, Fault
from tests.k8s_emulator.volumes import volume_path

NODE_NAME = "k8s-emulator-node"
CONTEXT = "k8s-emulator"


class KubernetesEmulator:
    """A core/v1 API server on ``127.0.0.1:<free port>`` over plain HTTP, no authentication.

    ``gpus``, ``cpu`` and ``memory`` are the node's capacity (what the scheduler fits pods
    into); ``node_labels`` are added to the node's labels (for ``nodeSelector`` and node
    affinity). Everything the pods write that is not a hostPath goes under ``root``.
    ``memory_poll_seconds``: how often a container's memory is compared with its limit; many
    containers at once need a slower pace (an OOM kill is then seen that much later).
    ``pod_security``: the Pod Security level enforced in a namespace (``baseline``, or
    ``privileged`` for none), by namespace; ``restricted`` where none is given."""

    def __init__(
        self,
        root: Path,
        gpus: int = 0,
        cpu: str = "16",
        memory: str = "64Gi",
        node_labels: dict[str, str] | None = None,
        memory_poll_seconds: float = MEMORY_POLL_SECONDS,
        pod_security: dict[str, str] | None = None,
    ) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        node = Node.build(NODE_NAME, cpu, memory, gpus, node_labels)
        self._cluster = Cluster(self.root, node, memory_poll_seconds, pod_security)
        self._server: ApiHttpServer | None = None
        self._thread: threading.Thread | None = None

    # -- serving ---------------------------------------------------------------------------

    def start(self) -> KubernetesEmulator:
        """Bind a free port on 127.0.0.1 and serve in a background thread."""
        if self._server is not None:
            raise RuntimeError("the emulator is already started")
        self._server = ApiHttpServer(self._cluster)
        self._cluster.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="k8s-emulator-api",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Kill every container process, close every connection, stop serving."""
        self._cluster.kill_everything()
        if self._server is not None:
            self._server.shutdown()
            self._server.close_connections()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> KubernetesEmulator:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the emulator is not started")
        return self._cluster.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_kubeconfig(self, path: Path | str, namespace: str = "default") -> Path:
        """A kubeconfig whose current context is this emulator (no credentials)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": CONTEXT, "cluster": {"server": self.url}}],
            "users": [{"name": CONTEXT, "user": {}}],
            "contexts": [
                {
                    "name": CONTEXT,
                    "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace},
                }
            ],
            "current-context": CONTEXT,
            "preferences": {},
        }
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        return target

    # -- for assertions --------------------------------------------------------------------

    def pods(self, namespace: str = "default") -> list[dict[str, Any]]:
        """The pods of a namespace as stored (copies), oldest first."""
        return self._cluster.store.all("pods", namespace)

    def services(self, namespace: str = "default") -> list[dict[str, Any]]:
        return self._cluster.store.all("services", namespace)

    def network_policies(self, namespace: str = "default") -> list[dict[str, Any]]:
        return self._cluster.store.all("networkpolicies", namespace)

    def secrets(self, namespace: str = "default") -> list[dict[str, Any]]:
        return self._cluster.store.all("secrets", namespace)

    def created_pod_specs(self) -> list[dict[str, Any]]:
        """The spec of every pod ever created, in order (they outlive their pods)."""
        return self._cluster.created_pod_specs()

    def events(self, namespace: str = "default") -> list[dict[str, Any]]:
        """The events of a namespace, oldest first (they outlive their pods)."""
        return self._cluster.store.all("events", namespace)

    def requests(self) -> list[ApiRequest]:
        """Every request received so far, in order (method, path with query, User-Agent)."""
        if self._server is None:
            raise RuntimeError("the emulator is not started")
        return list(self._server.requests)

    def fail_next(
        self,
        method: str,
        path: str,
        *,
        status: int,
        times: int = 1,
        retry_after: int | None = None,
    ) -> None:
        """Answer the next ``times`` ``method`` requests on a path starting with ``path`` with
        ``status`` (a ``Status`` body; ``Retry-After`` when given), as a busy or restarting API
        server does, before they reach the API: for tests of a client's retries."""
        if self._server is None:
            raise RuntimeError("the emulator is not started")
        self._server.faults.append(Fault(method, path, status, times, retry_after))

    # -- disruptions, scripted by a test -------------------------------------------------------

    def evict(
        self, name: str, namespace: str = "default", *, grace_seconds: int | None = None
    ) -> None:
        """The kubelet evicts the pod under node pressure: ``DisruptionTarget``
        (``TerminationByKubelet``), its containers stopped (SIGTERM, SIGKILL after the grace
        period, the pod's by default), the pod kept, ``Failed`` with reason ``Evicted``."""
        message = "The node was low on resource: memory. "
        disruption = Disruption("TerminationByKubelet", message.strip(), "Evicted")
        self._cluster.disrupt_pod(namespace, name, disruption, grace_seconds)

    def preempt(
        self, name: str, namespace: str = "default", *, grace_seconds: int | None = None
    ) -> None:
        """The scheduler preempts the pod for one of higher priority: ``DisruptionTarget``
        (``PreemptionByScheduler``), then the pod is deleted with its grace period."""
        disruption = Disruption(
            "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher "
            "priority pod",
        )  # fmt: skip
        self._cluster.disrupt_pod(namespace, name, disruption, grace_seconds)

    def lose_node(self, *, keep_pods: bool = False) -> None:
        """The node is lost: every container killed at once; its pods deleted (the pod garbage
        collector, after ``DisruptionTarget``/``DeletionByPodGC``) or, with ``keep_pods``,
        kept ``Failed`` with reason ``NodeLost``. Pods created afterwards run on a node that
        replaced it."""
        self._cluster.lose_node(keep_pods=keep_pods)

    def created_pod_names(self) -> list[str]:
        """Every pod ever created, in order (a name twice means a duplicate pod)."""
        return self._cluster.created_pod_names()

    def volume_path(self, namespace: str, volume: dict[str, Any], pod_name: str = "") -> Path:
        """Where a pod volume lives on this machine (a claim's folder, an NFS export's ...).
        Volumes of a pod's own (``emptyDir``, ``configMap``, ``secret``) need ``pod_name``
        of a pod that exists."""
        pod_dir = self.root / "pods" / namespace
        if pod_name:
            pod = next(p for p in self.pods(namespace) if p["metadata"]["name"] == pod_name)
            pod_dir = pod_dir / f"{pod_name}-{pod['metadata']['uid'][:8]}"
        return volume_path(self.root, pod_dir, namespace, copy.deepcopy(volume))
