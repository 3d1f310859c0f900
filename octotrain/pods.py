"""The pods of a run: one per node, built from the run's plan (plain dicts in the Kubernetes
API's shape, which the KubernetesPodOperator takes as its pod template).

Each pod has three containers sharing a work volume (``/octotrain/work``: the node's
``DATASET``, ``MODEL``, ``OUTPUT``, ``METRICS``, ``CHECKPOINT`` and log folder):

- ``stage`` (init, the Octotrain image): stages the data inputs and input models through the
  node cache, exactly as the local launcher does, restores the node's latest checkpoint into
  ``CHECKPOINT``, and copies the in-pod agent into a shared volume;
- ``base`` (the algorithm's image): the agent's wrapper, which starts the resource monitor and
  then the user's command with ``--name=value`` parameters and the training environment of
  docs: the environment contract, teeing its output to the train log;
- ``sync`` (a native sidecar, Kubernetes 1.29+: an init container with ``restartPolicy:
  Always``, the Octotrain image): every few seconds uploads the logs, metrics and resource
  samples to the object store, and ``CHECKPOINT`` at most every ``checkpoint_sync_seconds``;
  when the training ends it uploads the final state, ``CHECKPOINT`` and ``OUTPUT`` (the
  wrapper waits for it); Kubernetes stops it once the training container has
  ended, however it ended, so the pod completes.

Distributed runs (several nodes) get a headless Service; each pod is ``<node>.<service>``, and
``MASTER_ADDR`` is node 0's DNS name.

The pods let no one in where they do not belong: no service-account token (users' code has no
business with the cluster's API), and every container meets the Pod Security Standards'
``restricted`` profile (non-root, no privilege escalation, no capabilities, the runtime's
seccomp profile), except a task that runs as root (uid 0, which the manual allows): it keeps the
runtime's default capabilities, which only a ``baseline`` namespace accepts
(``pod_security`` in ``config/kubernetes.toml``). The run's NetworkPolicy is
``octotrain.network_policy``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from octotrain.contracts import (
    NodeFolders,
    NodeLogNames,
    parameter_arguments,
    parameter_text,
    training_environment,
)
from octotrain.hang_detection import HANG_REPORT_FILE
from octotrain.hang_detection import wrapper_arguments as hang_arguments
from octotrain.kubernetes_config import KubernetesConfig
from octotrain.metric_definitions import extraction_arguments
from octotrain.mount_volumes import kubernetes_mounts
from octotrain.node_progress import PHASE_FILE, PROGRESS_SAMPLES_FILE, wrapper_arguments
from octotrain.planning import RunPlan
from octotrain.secrets import is_sensitive
from octotrain.time_limits import active_deadline_seconds

AGENT_DIR = "/octotrain/agent"
WORK_DIR = "/octotrain/work"
LOGS_DIR = f"{WORK_DIR}/logs"
CACHE_DIR = "/octotrain/cache"
TRAIN_CONTAINER = "base"  # the KubernetesPodOperator's base container
STAGE_CONTAINER = "stage"
SYNC_CONTAINER = "sync"
EXIT_FILE = f"{WORK_DIR}/exit-code"
UPLOAD_DONE_FILE = f"{WORK_DIR}/upload-done"
SYNC_READY_FILE = f"{WORK_DIR}/sync-ready"
RESOURCES_FILE = f"{WORK_DIR}/resources.jsonl"
NODE_PHASE_FILE = (
    f"{WORK_DIR}/{PHASE_FILE}"  # the sidecar syncs both (hooks/kubernetes/pod_node.py)
)
NODE_PROGRESS_FILE = f"{WORK_DIR}/{PROGRESS_SAMPLES_FILE}"
LABEL_TASK = "octotrain.io/task"
LABEL_RUN = "octotrain.io/run"
LABEL_NODE = "octotrain.io/node"
ANNOTATION_RUN_ID = "octotrain.io/run-id"
# Kueue's plain-Pod groups: the pods of one group are admitted together (all or none) once
# they all exist, in the queue their label names.
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_GROUP = "kueue.x-k8s.io/pod-group-name"
KUEUE_GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
KUEUE_API_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
# Volcano: the pods' scheduler, their PodGroup's annotation and API.
VOLCANO_SCHEDULER = "volcano"
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
VOLCANO_API_GROUP, VOLCANO_VERSION = "scheduling.volcano.sh", "v1beta1"
ROOT_UID = 0


@dataclass(frozen=True)
class PodSettings:
    """What a pod needs beside the plan: where it runs and with what."""

    namespace: str
    octotrain_image: str
    config: KubernetesConfig
    stop_grace_seconds: int
    # At most how often the sidecar syncs the node's CHECKPOINT while it trains.
    checkpoint_sync_seconds: float = 30
    # Environment of the stage and sync containers when no Secret holds it (object store).
    store_env: dict[str, str] = field(default_factory=dict)
    # A partial pod spec from the resource spec, merged under the built pod.
    template: dict[str, Any] = field(default_factory=dict)


def run_label(plan: RunPlan) -> str:
    """A label value (63 characters at most) naming the run."""
    return _label(plan.task_id, plan.run_key)


def _label(task_id: int, run_key: str) -> str:
    return hashlib.sha256(f"{task_id}/{run_key}".encode()).hexdigest()[:16]


def pod_group_name(task_id: int, run_key: str) -> str:
    """The Kueue pod group of a run's pods, which is also the name of its Workload."""
    return f"octotrain-{task_id}-{_label(task_id, run_key)}"


def kueue_pod_group(
    plan: RunPlan, config: KubernetesConfig
) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations that make a run's pods one Kueue pod group in its project's
    LocalQueue, with its WorkloadPriorityClass; none when Kueue does not admit the pods. The
    group is the run's, whatever its restarts: the pods of a restart replace the group's ended
    ones (Kueue keeps a preempted group's workload and readmits it waiting for them)."""
    if config.admission != "kueue":
        return {}, {}
    labels = {KUEUE_QUEUE: config.kueue.queue_of(plan.project),
              KUEUE_GROUP: pod_group_name(plan.task_id, plan.run_key)}  # fmt: skip
    if priority_class := config.kueue.priority_class(plan.priority):
        labels[KUEUE_PRIORITY] = priority_class
    return labels, {KUEUE_GROUP_COUNT: str(plan.world_size)}


def volcano_pod_group(plan: RunPlan, config: KubernetesConfig, namespace: str) -> dict[str, Any]:
    """The run's Volcano PodGroup: Volcano's scheduler binds none of its pods before it can
    bind ``minMember`` of them (every node), in the project's Volcano Queue, at the priority
    class of the task's priority. Its name is the pods' annotation ``VOLCANO_GROUP``."""
    spec: dict[str, Any] = {"minMember": plan.world_size,
                            "queue": config.volcano.queue_of(plan.project)}  # fmt: skip
    if priority_class := config.priority_class(plan.priority):
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": f"{VOLCANO_API_GROUP}/{VOLCANO_VERSION}",
        "kind": "PodGroup",
        "metadata": {
            "name": pod_group_name(plan.task_id, plan.run_key),
            "namespace": namespace,
            "labels": {LABEL_TASK: str(plan.task_id), LABEL_RUN: run_label(plan)},
        },
        "spec": spec,
    }


def service_name(plan: RunPlan) -> str:
    """The run's headless Service: a DNS label, unique per run."""
    return f"octotrain-{plan.task_id}-{run_label(plan)}"


def secret_name(plan: RunPlan) -> str:
    """The run's Secret of its secret variables and parameters (``run_secret``)."""
    return f"octotrain-{plan.task_id}-{run_label(plan)}-secrets"


def secret_parameter_variable(position: int) -> str:
    """The variable a secret parameter reaches the training container in, from the run's
    Secret, for ``$(...)`` in the training's command line."""
    return f"OCTOTRAIN_SECRET_PARAMETER_{position}"


def run_secret(plan: RunPlan, namespace: str) -> dict[str, Any]:
    """The Secret of the run's secret variables and parameters, ``plan`` with their real
    values: pods read them through ``secretKeyRef`` (their spec names the key, never the
    value), a secret parameter through a variable the command line expands."""
    data = {
        _secret_key("env", position): str(value)
        for position, (name, value) in enumerate(plan.env.items())
        if is_sensitive(name)
    } | {
        _secret_key("parameter", position): parameter_text(value)
        for position, (name, value) in enumerate(plan.parameters.items())
        if is_sensitive(name)
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(plan),
            "namespace": namespace,
            "labels": {LABEL_TASK: str(plan.task_id), LABEL_RUN: run_label(plan)},
        },
        "type": "Opaque",
        "stringData": data,
    }


def _secret_key(kind: str, position: int) -> str:
    return f"{kind}-{position}"


def _secret_ref(plan: RunPlan, kind: str, position: int) -> dict[str, Any]:
    key = _secret_key(kind, position)
    return {"secretKeyRef": {"name": secret_name(plan), "key": key}}


def _training_variables(plan: RunPlan, environment: dict[str, str]) -> list[dict[str, Any]]:
    """The training container's variables: a secret one from the run's Secret, and one more
    per secret parameter for its command line."""
    positions = {name: position for position, name in enumerate(plan.env)}
    variables: list[dict[str, Any]] = [
        {"name": key, "valueFrom": _secret_ref(plan, "env", positions[key])}
        if key in positions and is_sensitive(key)
        else {"name": key, "value": value}
        for key, value in environment.items()
    ]
    for position, name in enumerate(plan.parameters):
        if is_sensitive(name):
            variables.append({
                "name": secret_parameter_variable(position),
                "valueFrom": _secret_ref(plan, "parameter", position),
            })  # fmt: skip
    return variables


def training_arguments(plan: RunPlan) -> list[str]:
    """The algorithm's parameters on the command line: a secret one as a ``$(...)`` reference
    that Kubernetes expands from the Secret, every other one ``_escaped``."""
    return [
        f"--{name}=$({secret_parameter_variable(position)})"
        if is_sensitive(name)
        else _escaped(parameter_arguments({name: value}))[0]
        for position, (name, value) in enumerate(plan.parameters.items())
    ]


def master_address(plan: RunPlan, namespace: str) -> str:
    """Node 0's address: its DNS name under the run's Service, or the pod itself."""
    if plan.world_size == 1:
        return "127.0.0.1"
    return f"{plan.node_indices[0]}.{service_name(plan)}.{namespace}.svc.cluster.local"


def pod_labels(plan: RunPlan, node_index: str) -> dict[str, str]:
    return {LABEL_TASK: str(plan.task_id), LABEL_RUN: run_label(plan), LABEL_NODE: node_index}


def node_pod(plan: RunPlan, node_index: str, settings: PodSettings) -> dict[str, Any]:
    """The pod of node ``node_index``."""
    config = settings.config
    resources = plan.resources
    assert resources is not None, "a plan made by build_run_plan has its resources"
    scheduling = config.scheduling(resources.spec)
    folders = NodeFolders.under(Path(WORK_DIR))
    names = NodeLogNames(task_id=plan.task_id, node_index=node_index)
    environment = training_environment(
        folders=folders,
        task_id=plan.task_id,
        run_id=plan.run_id,
        node_index=node_index,
        world_size=plan.world_size,
        master_addr=plan.master_addr,
        master_port=plan.master_port,
        algorithm_env=plan.env,
        with_model=bool(plan.input_models),
        with_code=plan.code is not None,
    ) | {
        "PYTHONPATH": AGENT_DIR,
        "OCTOTRAIN_MEMORY_LIMIT_BYTES": str(resources.memory_mib * 1024 * 1024),
    }
    mounts = [(item.name, item.object_prefix) for item in plan.mounts]
    volumes: list[dict[str, Any]] = [
        {"name": "octotrain-agent", "emptyDir": {}},
        _work_volume(plan, node_index, scheduling.node_local_path),
        (
            {"name": "octotrain-cache",
             "hostPath": {"path": config.node_cache_host_path, "type": "DirectoryOrCreate"}}
            if config.node_cache_host_path
            else {"name": "octotrain-cache", "emptyDir": {}}
        ),
    ]  # fmt: skip
    train_mounts = [
        {"name": "octotrain-agent", "mountPath": AGENT_DIR, "readOnly": True},
        {"name": "octotrain-work", "mountPath": WORK_DIR},
        # DATASET, MODEL and CODE are links into the node cache's views: read them there
        {"name": "octotrain-cache", "mountPath": CACHE_DIR, "readOnly": True},
    ]
    if mounts:
        volume, mount_points = kubernetes_mounts(
            resources.mount_volume, mounts, str(folders.mounts)
        )
        volumes.append(volume)
        train_mounts += mount_points
    store = _store_environment(settings)
    limits = {"cpu": _cpu(resources.cpu), "memory": f"{resources.memory_mib}Mi"}
    if resources.gpu_count:
        limits["nvidia.com/gpu"] = str(resources.gpu_count)
    prefix = plan.objects.prefix
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"train-{plan.task_id}-{node_index}",
            "namespace": settings.namespace,
            "labels": pod_labels(plan, node_index),
            "annotations": {ANNOTATION_RUN_ID: plan.run_id},
        },
        "spec": {
            "restartPolicy": "Never",
            "hostname": node_index,
            "enableServiceLinks": False,
            "terminationGracePeriodSeconds": settings.stop_grace_seconds,
            "automountServiceAccountToken": False,
            "securityContext": _security(plan),
            "volumes": volumes,
            "initContainers": [
                {
                    "name": STAGE_CONTAINER,
                    "image": settings.octotrain_image,
                    "command": [
                        "octotrain", "node", "stage", "--plan", plan.objects.stage_plan,
                        "--node", node_index, "--work", WORK_DIR, "--cache", CACHE_DIR,
                        "--agent", AGENT_DIR,
                    ],
                    **store,
                    "securityContext": _container_security(plan),
                    "volumeMounts": [
                        {"name": "octotrain-agent", "mountPath": AGENT_DIR},
                        {"name": "octotrain-work", "mountPath": WORK_DIR},
                        {"name": "octotrain-cache", "mountPath": CACHE_DIR},
                    ],
                },
                {
                    "name": SYNC_CONTAINER,
                    "image": settings.octotrain_image,
                    "restartPolicy": "Always",  # a native sidecar (Kubernetes 1.29+)
                    "command": [
                        "octotrain", "node", "sync", "--prefix", prefix, "--node", node_index,
                        "--work", WORK_DIR, "--every", str(config.sync_interval_seconds),
                        "--exit-file", EXIT_FILE, "--ready-file", SYNC_READY_FILE,
                        "--done-file", UPLOAD_DONE_FILE, "--cache", CACHE_DIR,
                        "--run-id", plan.run_id,
                        "--checkpoint-every", f"{settings.checkpoint_sync_seconds:g}",
                    ],
                    **store,
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    "securityContext": _container_security(plan),
                    "volumeMounts": [
                        {"name": "octotrain-work", "mountPath": WORK_DIR},
                        # to release the node's pins in the machine's cache at its end
                        {"name": "octotrain-cache", "mountPath": CACHE_DIR},
                    ],
                },
            ],
            "containers": [
                {
                    "name": TRAIN_CONTAINER,
                    "image": plan.image,
                    "command": [
                        "python3", f"{AGENT_DIR}/run_training.py",
                        "--train-log", f"{LOGS_DIR}/{names.train}",
                        "--sidecar-log", f"{LOGS_DIR}/{names.sidecar}",
                        "--exit-file", EXIT_FILE, "--resources", RESOURCES_FILE,
                        "--await-sidecar", SYNC_READY_FILE, "--await-upload", UPLOAD_DONE_FILE,
                        "--await-upload-seconds", str(config.final_upload_timeout_seconds),
                        "--stop-grace-seconds",
                        str(training_grace_seconds(settings.stop_grace_seconds)),
                        *_training_limit(plan), *extraction_arguments(plan.metric_extraction),
                        *wrapper_arguments(phase_file=NODE_PHASE_FILE,
                                           progress_file=NODE_PROGRESS_FILE),
                        *hang_arguments(plan.hang_after_seconds,
                                        stop_when_hung=plan.stop_when_hung,
                                        report=f"{WORK_DIR}/{HANG_REPORT_FILE}"),
                        "--", *_escaped(plan.command), *training_arguments(plan),
                    ],
                    "env": _training_variables(plan, environment),
                    "resources": {"requests": dict(limits), "limits": limits},
                    "securityContext": _container_security(plan),
                    "volumeMounts": train_mounts,
                },
            ],
        },
    }  # fmt: skip
    spec = pod["spec"]
    assert isinstance(spec, dict)
    if plan.code is not None:  # uploaded code: the command runs in CODE, as on a process
        spec["containers"][0]["workingDir"] = str(folders.code)
    if plan.world_size > 1:
        spec["subdomain"] = service_name(plan)
    deadline = pod_deadline(plan, config=config, grace_seconds=settings.stop_grace_seconds)
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    if priority_class := config.priority_class(plan.priority):
        spec["priorityClassName"] = priority_class
    if scheduling.node_selector:
        spec["nodeSelector"] = dict(scheduling.node_selector)
    if scheduling.tolerations:
        spec["tolerations"] = list(scheduling.tolerations)
    return _merged(settings.template, pod)


def _escaped(words: list[str]) -> list[str]:
    """``words`` as Kubernetes passes them on unchanged: ``$`` doubled (``$(X)`` expands)."""
    return [word.replace("$", "$$") for word in words]


def headless_service(plan: RunPlan, namespace: str, port: int) -> dict[str, Any]:
    """The Service that gives each pod of a distributed run its DNS name, ready or not."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(plan),
            "namespace": namespace,
            "labels": {LABEL_TASK: str(plan.task_id), LABEL_RUN: run_label(plan)},
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {LABEL_RUN: run_label(plan)},
            "ports": [{"name": "rendezvous", "port": port, "targetPort": port}],
        },
    }


def _work_volume(plan: RunPlan, node_index: str, node_local_path: str) -> dict[str, Any]:
    if not node_local_path:
        return {"name": "octotrain-work", "emptyDir": {}}
    path = f"{node_local_path.rstrip('/')}/{plan.task_id}-{run_label(plan)}-{node_index}"
    return {"name": "octotrain-work", "hostPath": {"path": path, "type": "DirectoryOrCreate"}}


def pod_deadline(plan: RunPlan, *, config: KubernetesConfig, grace_seconds: int) -> int | None:
    """The pod's ``activeDeadlineSeconds``, when the run has a training limit."""
    if plan.max_training_seconds is None:
        return None
    return active_deadline_seconds(
        plan.max_training_seconds,
        startup_seconds=config.startup_timeout_seconds,
        grace_seconds=grace_seconds,
    )


def _training_limit(plan: RunPlan) -> list[str]:
    """The wrapper's own stop at the training limit (``octotrain.time_limits``)."""
    if plan.max_training_seconds is None:
        return []
    return ["--max-training-seconds", str(plan.max_training_seconds)]


def training_grace_seconds(pod_grace_seconds: int) -> int:
    """How long a stopped training may ignore SIGTERM before its wrapper kills it: two thirds
    of the pod's grace period, the rest left for the sidecar's final upload (Kubernetes kills
    every container of the pod at the end of its grace period)."""
    return max(1, pod_grace_seconds * 2 // 3)


def _security(plan: RunPlan) -> dict[str, Any]:
    """The task's uid (files of the shared volumes too), or, for ``ma-user``, the image's own
    default user: the container starts as ma-user, as on ModelArts. Non-root, unless the task
    runs as root, under the runtime's seccomp profile."""
    seccomp = {"seccompProfile": {"type": "RuntimeDefault"}}
    if plan.container_user:
        return {"runAsNonRoot": True} | seccomp
    uid = plan.run_as_uid
    user = {"runAsUser": uid, "runAsGroup": uid, "fsGroup": uid}
    return user | ({} if runs_as_root(plan) else {"runAsNonRoot": True}) | seccomp


def _container_security(plan: RunPlan) -> dict[str, Any]:
    """No privilege escalation, and no capabilities unless the task runs as root (which the
    ``restricted`` profile refuses anyway: root keeps the runtime's default ones)."""
    dropped = {} if runs_as_root(plan) else {"capabilities": {"drop": ["ALL"]}}
    return {"allowPrivilegeEscalation": False} | dropped


def runs_as_root(plan: RunPlan) -> bool:
    """The task runs as uid 0: no ``restricted`` Pod Security for its pods."""
    return not plan.container_user and plan.run_as_uid == ROOT_UID


def _store_environment(settings: PodSettings) -> dict[str, Any]:
    secret = settings.config.object_store_secret
    if secret:
        return {"envFrom": [{"secretRef": {"name": secret}}]}
    return {"env": [{"name": key, "value": value} for key, value in settings.store_env.items()]}


def _cpu(cpu: float) -> str:
    return str(int(cpu)) if float(cpu).is_integer() else f"{int(cpu * 1000)}m"


def _merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` deep-merged over ``base`` (dicts merged, everything else replaced)."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged
