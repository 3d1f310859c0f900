"""The node agent's kubelet: runs one bound pod on this machine and keeps its status.

A pod's life here: its volumes are set up; its init containers run one after another (one
failing fails the pod), except native sidecars (``restartPolicy: Always``), which are started
and left running; then all its containers start together, each as a process group; when they
have all ended, the sidecars are stopped (SIGTERM, SIGKILL after the pod's grace period, in
reverse order); the pod is ``Running`` while any container runs and ``Succeeded``/``Failed``
by its main containers when all have ended. An image
whose name contains ``does-not-exist`` fails to pull (``ErrImagePull``, then
``ImagePullBackOff``), as a missing image would. Deleting the pod sends SIGTERM to every
container, SIGKILL to what is left after the grace period, then removes the pod. A disruption
(``disrupt``: an eviction, a preemption, the node's loss) first adds the ``DisruptionTarget``
condition, then stops the containers the same way; a pod the kubelet evicts is kept, ``Failed``
with the status reason ``Evicted`` whatever its containers' exit codes.
"""

from __future__ import annotations

import copy
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

from tests.k8s_node_agent.api_pods import ApiPods
from tests.k8s_node_agent.containers import ContainerProcess, Exit
from tests.k8s_node_agent.logs import ContainerLog
from tests.k8s_node_agent.podenv import (
    ConfigError,
    container_argv,
    process_environment,
    spec_environment,
)
from tests.k8s_node_agent.quantities import GPU, container_requests, memory_limit
from tests.k8s_node_agent.rewrite import Rewriter
from tests.k8s_node_agent.status import (
    LOOPBACK,
    Conditions,
    ContainerRecord,
    pod_phase,
    update_conditions,
)
from tests.k8s_node_agent.timestamps import rfc3339
from tests.k8s_node_agent.volumes import MountError, mount_host_path, prepare_volume

MISSING_IMAGE_MARK = "does-not-exist"
# How long the kubelet waits before it retries what failed (a mount, a missing Secret) and
# before a failed pull becomes ImagePullBackOff.
RETRY_SECONDS = 0.5
# How long a killed container may take to end before the kubelet gives up waiting.
_KILL_WAIT_SECONDS = 5.0
# The kubelet keeps at most this much of a termination message.
_MESSAGE_BYTES = 4096


@dataclass(frozen=True)
class Disruption:
    """What ends a pod from outside its containers, as Kubernetes 1.26+ says it: the reason
    and message of the pod's ``DisruptionTarget`` condition (``TerminationByKubelet``,
    ``PreemptionByScheduler``, ``EvictionByEvictionAPI``, ``DeletionByTaintManager``,
    ``DeletionByPodGC``) and, for a pod that is kept, its status reason once it has failed
    (the kubelet's ``Evicted``; ``NodeLost``); "" for a pod that is deleted instead."""

    condition_reason: str
    message: str
    status_reason: str = ""


class Host(Protocol):
    """What a pod's kubelet needs from the node agent."""

    store: ApiPods
    root: Path
    port: int
    node_name: str
    memory_poll_seconds: float
    allocatable_cpu: Fraction
    gpu_count: int

    def lookup(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None: ...

    def dns_domains(self, namespace: str) -> tuple[list[str], list[str]]: ...

    def pod_finished(self, uid: str) -> None: ...

    def pod_removed(self, uid: str) -> None: ...


@dataclass
class _Container:
    spec: dict[str, Any]
    record: ContainerRecord
    log: ContainerLog
    termination_file: Path
    process: ContainerProcess | None = None
    ended: threading.Event = field(default_factory=threading.Event)


class PodRuntime:
    """One pod on the node, from binding to removal."""

    def __init__(self, host: Host, pod: dict[str, Any], gpu_ids: list[int]) -> None:
        self._host = host
        self._store = host.store
        metadata = pod["metadata"]
        self.uid: str = metadata["uid"]
        self.namespace: str = metadata["namespace"]
        self.name: str = metadata["name"]
        self._spec = copy.deepcopy(pod["spec"])
        self._gpu_ids = gpu_ids  # the node's GPUs the pod holds
        self.pod_dir = host.root / "pods" / self.namespace / f"{self.name}-{self.uid[:8]}"
        init_specs = self._spec.get("initContainers") or []
        self._init = [self._container(c, True, "PodInitializing") for c in init_specs]
        waiting = "PodInitializing" if init_specs else "ContainerCreating"
        self._regular = [self._container(c, False, waiting) for c in self._spec["containers"]]
        self._conditions = Conditions()
        self._volumes: dict[str, Path] = {}
        self.deleting = threading.Event()
        self._deadline = 0.0
        self._finished = False
        self._start_time: float | None = None
        self._disruption: Disruption | None = None

    def _container(self, spec: dict[str, Any], init: bool, waiting: str) -> _Container:
        name = spec["name"]
        folder = self.pod_dir / "containers" / name
        folder.mkdir(parents=True, exist_ok=True)
        termination = folder / "termination-log"
        termination.touch()
        sidecar = init and spec.get("restartPolicy") == "Always"
        return _Container(
            spec=spec,
            record=ContainerRecord(
                name, spec["image"], init, sidecar=sidecar, waiting_reason=waiting
            ),
            log=ContainerLog(folder / "container.log"),
            termination_file=termination,
        )

    # -- what the API reads ----------------------------------------------------------------

    def log_of(self, name: str) -> tuple[ContainerLog, ContainerRecord] | None:
        for container in (*self._init, *self._regular):
            if container.record.name == name:
                return container.log, container.record
        return None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        threading.Thread(target=self._run, name=f"kubelet-{self.name}", daemon=True).start()

    def _run(self) -> None:
        with self._store.lock:
            self._start_time = time.time()
            self._publish()
        if not self._mount_volumes():
            return
        for container in self._init:
            if not self._launch(container):
                return
            if container.record.sidecar:
                continue
            container.ended.wait()
            if container.record.exit_code != 0:
                return
        for container in self._regular:
            threading.Thread(
                target=self._launch,
                args=(container,),
                name=f"kubelet-{self.name}-start",
                daemon=True,
            ).start()
        if any(c.record.sidecar for c in self._init):
            self._stop_sidecars_when_done()

    def _stop_sidecars_when_done(self) -> None:
        """Once every main container has ended, stop the sidecars, last started first."""
        for container in self._regular:
            container.ended.wait()
        grace = float(self._spec.get("terminationGracePeriodSeconds", 30))
        for sidecar in reversed([c for c in self._init if c.record.sidecar]):
            if sidecar.process is None or sidecar.ended.is_set() or self.deleting.is_set():
                continue
            self._event("Killing", f"Stopping container {sidecar.record.name}",
                        container=sidecar.record.name)  # fmt: skip
            sidecar.process.signal(signal.SIGTERM)
            if not sidecar.ended.wait(grace):
                sidecar.process.signal(signal.SIGKILL)
                sidecar.ended.wait(_KILL_WAIT_SECONDS)

    def _event(
        self, reason: str, message: str, *, warning: bool = False, container: str = ""
    ) -> None:
        pod = self._pod()
        if pod is None:
            return
        field_path = None
        if container:
            kind = (
                "initContainers"
                if any(c.record.name == container for c in self._init)
                else "containers"
            )
            field_path = f"spec.{kind}{{{container}}}"
        self._store.record_event(pod, reason, message, warning=warning, field_path=field_path)

    def _pod(self) -> dict[str, Any] | None:
        pod = self._store.find("pods", self.namespace, self.name)
        return pod if pod is not None and pod["metadata"]["uid"] == self.uid else None

    def _mount_volumes(self) -> bool:
        reported: set[str] = set()
        for volume in self._spec.get("volumes") or []:
            while True:
                if self.deleting.is_set():
                    return False
                try:
                    self._volumes[volume["name"]] = prepare_volume(
                        self._host.root, self.pod_dir, self.namespace, volume, self._host.lookup
                    )
                    break
                except MountError as error:
                    if str(error) not in reported:
                        reported.add(str(error))
                        self._event("FailedMount", str(error), warning=True)
                    self.deleting.wait(RETRY_SECONDS)
        return True

    def _launch(self, container: _Container) -> bool:
        """Pull, configure and start a container; False when it did not start (it is then
        waiting, or terminated with ``StartError``)."""
        spec, record, name = container.spec, container.record, container.record.name
        if not self._pull(container):
            return False
        reported: set[str] = set()
        while True:
            if self.deleting.is_set():
                return False
            try:
                argv, cwd, environment = self._prepare(container)
                break
            except ConfigError as error:
                with self._store.lock:
                    record.waiting_reason = "CreateContainerConfigError"
                    record.waiting_message = str(error)
                    self._publish()
                if str(error) not in reported:
                    reported.add(str(error))
                    self._event("Failed", f"Error: {error}", warning=True, container=name)
                self.deleting.wait(RETRY_SECONDS)
        self._event("Created", f"Created container: {name}", container=name)
        process = ContainerProcess(
            argv,
            cwd,
            environment,
            container.log,
            memory_limit(spec),
            on_exit=lambda result: self._on_exit(container, result),
            memory_poll_seconds=self._host.memory_poll_seconds,
        )
        with self._store.lock:
            if self.deleting.is_set():
                return False
            try:
                if not argv:
                    raise OSError("no command specified")
                process.start()
            except OSError as error:
                message = _start_error(argv, error)
                record.terminate(time.time(), 128, "StartError", message)
                container.log.mark_complete()
                container.ended.set()
                self._publish()
                self._event("Failed", f"Error: {message}", warning=True, container=name)
                return False
            container.process = process
            record.start(time.time())
            self._publish()
        self._event("Started", f"Started container {name}", container=name)
        return True

    def _pull(self, container: _Container) -> bool:
        spec, record, name = container.spec, container.record, container.record.name
        image = spec["image"]
        policy = spec.get("imagePullPolicy", "IfNotPresent")
        if MISSING_IMAGE_MARK not in image:
            if policy == "Always":
                self._event("Pulling", f'Pulling image "{image}"', container=name)
                self._event(
                    "Pulled",
                    f'Successfully pulled image "{image}" in 0s (0s including waiting). '
                    "Image size: 0 bytes.",
                    container=name,
                )
            else:
                self._event(
                    "Pulled",
                    f'Container image "{image}" already present on machine',
                    container=name,
                )
            return True
        if policy == "Never":
            message = f'Container image "{image}" is not present with pull policy of Never'
            with self._store.lock:
                record.waiting_reason, record.waiting_message = "ErrImageNeverPull", message
                self._publish()
            self._event("ErrImageNeverPull", message, warning=True, container=name)
            return False
        full = normalized_image(image)
        error = (
            f'rpc error: code = NotFound desc = failed to pull and unpack image "{full}": '
            f'failed to resolve reference "{full}": {full}: not found'
        )
        self._event("Pulling", f'Pulling image "{image}"', container=name)
        with self._store.lock:
            record.waiting_reason, record.waiting_message = "ErrImagePull", error
            self._publish()
        self._event(
            "Failed", f'Failed to pull image "{image}": {error}', warning=True, container=name
        )
        self._event("Failed", "Error: ErrImagePull", warning=True, container=name)
        if self.deleting.wait(RETRY_SECONDS):
            return False
        with self._store.lock:
            record.waiting_reason = "ImagePullBackOff"
            record.waiting_message = f'Back-off pulling image "{image}"'
            self._publish()
        self._event("BackOff", f'Back-off pulling image "{image}"', container=name)
        self._event("Failed", "Error: ImagePullBackOff", warning=True, container=name)
        return False

    def _prepare(self, container: _Container) -> tuple[list[str], str, dict[str, str]]:
        spec, name = container.spec, container.record.name
        with self._store.lock:
            pod = self._pod()
            if pod is None:
                raise ConfigError("the pod is gone")
            pod = copy.deepcopy(pod)
        variables = spec_environment(pod, spec, self._host.lookup, self._host.allocatable_cpu)
        try:
            mounts = [
                (mount["mountPath"], str(mount_host_path(self._volumes[mount["name"]], mount)))
                for mount in spec.get("volumeMounts") or []
            ]
        except OSError as error:
            raise ConfigError(f"failed to prepare subPath for volumeMount: {error}") from error
        mounts.append((spec.get("terminationMessagePath", ""), str(container.termination_file)))
        subdomains, services = self._host.dns_domains(self.namespace)
        rewriter = Rewriter(mounts, self.namespace, subdomains, services)
        gpus = ",".join(str(i) for i in container_gpu_ids(self._gpu_ids, self._spec, name))
        container.record.gpu_ids = [int(i) for i in gpus.split(",") if i]
        port = str(self._host.port)
        extra = {
            "HOSTNAME": self._spec.get("hostname") or self.name,
            "KUBERNETES_SERVICE_HOST": LOOPBACK,
            "KUBERNETES_SERVICE_PORT": port,
            "KUBERNETES_PORT": f"tcp://{LOOPBACK}:{port}",
            "CUDA_VISIBLE_DEVICES": gpus,
            "NVIDIA_VISIBLE_DEVICES": gpus or "void",
        }
        environment = process_environment(variables, rewriter, extra)
        argv = container_argv(spec, variables, rewriter)
        return argv, self._working_dir(spec, rewriter, name), environment

    def _working_dir(self, spec: dict[str, Any], rewriter: Rewriter, name: str) -> str:
        """``workingDir`` on this machine: a mounted path's host folder, an existing host
        folder as it is, or else a folder in the container's own stand-in root file system
        (also where a container without ``workingDir`` starts)."""
        rootfs = self.pod_dir / "containers" / name / "rootfs"
        wanted = spec.get("workingDir") or ""
        rewritten = rewriter.path(wanted) if wanted else ""
        if rewritten and (rewritten != wanted or Path(wanted).is_dir()):
            target = Path(rewritten)
        elif wanted:
            target = rootfs / wanted.lstrip("/")
        else:
            target = rootfs
        target.mkdir(parents=True, exist_ok=True)
        return str(target)

    def _on_exit(self, container: _Container, result: Exit) -> None:
        record, name = container.record, container.record.name
        message = container.termination_file.read_bytes()[:_MESSAGE_BYTES].decode(
            "utf-8", errors="replace"
        )
        policy = container.spec.get("terminationMessagePolicy", "File")
        if not message and policy == "FallbackToLogsOnError" and result.exit_code != 0:
            message = container.log.tail_text(80, 2048)
        if result.reason == "OOMKilled":
            limit = memory_limit(container.spec) or 0
            self._event(
                "OOMKilled",
                f"Container {name} was OOM-killed: memory use {result.oom_rss} bytes exceeded "
                f"its limit of {limit} bytes",
                warning=True,
                container=name,
            )
        with self._store.lock:
            record.terminate(time.time(), result.exit_code, result.reason, message)
            container.ended.set()
            self._publish()

    def _publish(self) -> None:
        """Write the pod's status from what is known of its containers (store lock held)."""
        pod = self._pod()
        if pod is None:
            return
        now = time.time()
        init = [c.record for c in self._init]
        regular = [c.record for c in self._regular]
        phase = pod_phase(init, regular)
        disruption = self._disruption
        if disruption and disruption.status_reason and not self.has_running_containers:
            phase = "Failed"  # whatever the containers' exit codes
        update_conditions(self._conditions, phase, init, regular, now)
        if disruption is not None:
            self._conditions.set(
                "DisruptionTarget", True, now, disruption.condition_reason, disruption.message
            )
        status = pod["status"]
        status.update(
            {
                "phase": phase,
                "conditions": self._conditions.to_list(),
                "hostIP": LOOPBACK,
                "hostIPs": [{"ip": LOOPBACK}],
                "podIP": LOOPBACK,
                "podIPs": [{"ip": LOOPBACK}],
                "containerStatuses": [r.to_status() for r in regular],
            }
        )
        if self._start_time is not None:
            status["startTime"] = rfc3339(self._start_time)
        if init:
            status["initContainerStatuses"] = [r.to_status() for r in init]
        if phase == "Failed" and disruption is not None and disruption.status_reason:
            status.update({"reason": disruption.status_reason, "message": disruption.message})
        self._store.touch(pod)
        if phase in ("Succeeded", "Failed") and not self._finished:
            self._finished = True
            self._host.pod_finished(self.uid)

    # -- deletion ---------------------------------------------------------------------------

    def delete(self, grace_seconds: int) -> None:
        """Stop the pod's containers (SIGTERM, SIGKILL after ``grace_seconds``), then remove
        the pod. A second delete can only shorten the grace period."""
        with self._store.lock:
            deadline = time.monotonic() + grace_seconds
            if self.deleting.is_set():
                self._deadline = min(self._deadline, deadline)
                return
            self._deadline = deadline
            self.deleting.set()
            running = [
                c for c in (*self._init, *self._regular) if c.process and not c.ended.is_set()
            ]
        threading.Thread(
            target=self._terminate, args=(running,), name=f"kubelet-{self.name}-kill", daemon=True
        ).start()

    def disrupt(self, disruption: Disruption, grace_seconds: int) -> None:
        """Mark the pod ``DisruptionTarget``; a pod that is kept (``status_reason``) then has
        its containers stopped (SIGTERM, SIGKILL after ``grace_seconds``) and fails; one that
        is not is deleted by the caller next, which stops them."""
        with self._store.lock:
            self._disruption = disruption
            self._publish()
            if not disruption.status_reason:
                return
            self._deadline = time.monotonic() + grace_seconds
            self.deleting.set()  # no container starts any more
            running = [
                c for c in (*self._init, *self._regular) if c.process and not c.ended.is_set()
            ]
        threading.Thread(
            target=self._stop_kept, args=(running,), name=f"kubelet-{self.name}-evict", daemon=True
        ).start()

    def _stop_kept(self, running: list[_Container]) -> None:
        """Stop the containers of a pod that stays (evicted), then publish its failure."""
        self._stop_group([c for c in running if not c.record.sidecar])
        self._stop_group(list(reversed([c for c in running if c.record.sidecar])))
        for container in running:
            if not container.ended.is_set():
                container.process.signal(signal.SIGKILL)  # type: ignore[union-attr]
        for container in running:
            container.ended.wait(_KILL_WAIT_SECONDS)
        with self._store.lock:
            self._publish()

    @property
    def has_running_containers(self) -> bool:
        return any(c.process and not c.ended.is_set() for c in (*self._init, *self._regular))

    def _terminate(self, running: list[_Container]) -> None:
        """SIGTERM the main (and ordinary init) containers, then, once they have ended, the
        native sidecars, last started first (Kubernetes 1.29+); SIGKILL whatever is left at
        the deadline."""
        sidecars = [c for c in running if c.record.sidecar]
        others = [c for c in running if not c.record.sidecar]
        self._stop_group(others)
        self._stop_group(list(reversed(sidecars)))
        for container in running:
            if not container.ended.is_set():
                container.process.signal(signal.SIGKILL)  # type: ignore[union-attr]
        for container in running:
            container.ended.wait(_KILL_WAIT_SECONDS)
        self._host.pod_removed(self.uid)
        self.cleanup()

    def _stop_group(self, containers: list[_Container]) -> None:
        for container in containers:
            self._event(
                "Killing",
                f"Stopping container {container.record.name}",
                container=container.record.name,
            )
            if self._deadline <= time.monotonic():
                container.process.signal(signal.SIGKILL)  # type: ignore[union-attr]
            else:
                container.process.signal(signal.SIGTERM)  # type: ignore[union-attr]
        while any(not c.ended.is_set() for c in containers) and time.monotonic() < self._deadline:
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL every container now, waiting for them to end (the node agent stops)."""
        with self._store.lock:  # a container being started is either seen here or not started
            self.deleting.set()
            containers = [c for c in (*self._init, *self._regular) if c.process]
        for container in containers:
            container.process.signal(signal.SIGKILL)  # type: ignore[union-attr]
        for container in containers:
            container.ended.wait(_KILL_WAIT_SECONDS)

    def cleanup(self) -> None:
        """Remove the pod's emptyDir and projected volumes (its logs stay, for debugging)."""
        shutil.rmtree(self.pod_dir / "volumes", ignore_errors=True)


def _start_error(argv: list[str], error: OSError) -> str:
    program = argv[0] if argv else ""
    if isinstance(error, FileNotFoundError):
        cause = f'exec: "{program}": executable file not found in $PATH'
    elif isinstance(error, PermissionError):
        cause = f'exec: "{program}": permission denied'
    else:
        cause = str(error)
    return (
        "failed to create containerd task: failed to create shim task: OCI runtime create "
        f"failed: runc create failed: unable to start container process: {cause}: unknown"
    )


def container_gpu_ids(gpu_ids: list[int], spec: dict[str, Any], name: str) -> list[int]:
    """The pod's GPUs that the named container gets (as the device plugin hands them out):
    init containers reuse the pod's first GPUs; regular containers get consecutive shares."""
    for container in spec.get("initContainers") or []:
        if container["name"] == name:
            return gpu_ids[: int(container_requests(container).get(GPU, 0))]
    start = 0
    for container in spec.get("containers") or []:
        count = int(container_requests(container).get(GPU, 0))
        if container["name"] == name:
            return gpu_ids[start : start + count]
        start += count
    return []


def normalized_image(image: str) -> str:
    """The full reference of an image name (``busybox`` is ``docker.io/library/busybox:latest``),
    as containerd reports it in pull errors."""
    first, _, rest = image.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        image = f"docker.io/{image if rest else 'library/' + image}"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in image:
        image += ":latest"
    return image
