"""The pods of a run as the KubernetesPodOperator builds them (``build_pod_request_obj``):
env contract, resources, user, priority class, init and sidecar containers, volumes, DNS
names, for 1 and 8 nodes; Kubernetes 1.29's schema and the Pod Security profiles they meet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient
from sqlalchemy.orm import Session

from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.named_objects import Algorithms, ResourceSpecs
from octotrain.contracts import PLATFORM_ENV_NAMES
from octotrain.planning import RunPlan, build_run_plan
from octotrain.pods import master_address, service_name
from octotrain.settings import get_settings
from octotrain.tasks import Tasks
from operators.kubernetes.launch_pod import QUEUED_WAIT_SECONDS, LaunchNodePodOperator
from tests.factories import ADMIN, VALID_TASK
from tests.k8s_schemas import schema_causes

GPU_TASK = VALID_TASK | {
    "name": "gpu-task",
    "resource_spec": "modelarts-gpu",
    "algorithm": "image-algo",
    "parameters": {"n": 3, "lr": 0.5},
    "priority": 40,
    "mounts": [{"dataset": "many", "version": "v1"}],
    "data_inputs": [{"dataset": "house-prices", "version": "v1"}],
}
CPU_TASK = VALID_TASK | {"name": "cpu-task", "run_as_uid": 1234, "priority": -20}
ROOT_TASK = VALID_TASK | {"name": "root-task", "run_as_uid": 0}
RUNTIME_DEFAULT = {"type": "RuntimeDefault"}


class _TaskInstance:
    def __init__(self, plan: RunPlan, map_index: int) -> None:
        self.plan, self.map_index = plan, map_index
        self.dag_id, self.task_id, self.try_number = "octotrain_task_9", "launch", 1

    def xcom_pull(self, *, task_ids: str, key: str) -> dict[str, Any]:
        return self.plan.model_dump(mode="json")


def plan_of(session: Session, document: dict[str, Any], nodes: int) -> RunPlan:
    ResourceSpecs(session, ADMIN).update("demo", "modelarts-gpu", {"mount_volume": "datasets-pvc"})
    task = Tasks(session, ADMIN).create(document | {"node_count": nodes})
    plan = build_run_plan(session, task, run_id="manual__2026-12-02", master_addr="",
                          master_port=29500, triggered_by="alice")  # fmt: skip
    return plan.model_copy(update={"master_addr": master_address(plan, "octotrain")})


def pods(plan: RunPlan) -> list[dict[str, Any]]:
    built = []
    for number, node in enumerate(plan.node_indices):
        operator = LaunchNodePodOperator(
            task_id="launch", training_task_id=plan.task_id, node_index=node
        )
        context = {"ti": _TaskInstance(plan, number), "run_id": plan.run_id, "dag": object()}
        pod = operator.build_pod_request_obj(context, dry_run=True)  # type: ignore[arg-type]
        built.append(ApiClient().sanitize_for_serialization(pod))
    return built


def containers(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = pod["spec"]
    return {c["name"]: c for c in [*spec["initContainers"], *spec["containers"]]}


@pytest.mark.parametrize("nodes", [1, 8])
def test_each_node_gets_the_environment_contract_and_its_rank(
    rule_session: Session, nodes: int
) -> None:
    plan = plan_of(rule_session, GPU_TASK, nodes)
    built = pods(plan)
    assert len(built) == nodes
    for rank, pod in enumerate(built):
        env = {item["name"]: item["value"] for item in containers(pod)["base"]["env"]}
        assert set(env) >= PLATFORM_ENV_NAMES - {"MODEL", "MODEL_PATH", "CODE"}
        assert "MODEL" not in env  # a regular training: no input models, no MODEL
        # an image-only algorithm: no uploaded code, no CODE, the image's working folder
        assert "CODE" not in env and "workingDir" not in containers(pod)["base"]
        assert (env["RANK"], env["WORLD_SIZE"]) == (str(rank), str(nodes))
        assert env["NODE_INDEX"] == plan.node_indices[rank]
        assert env["DATASET"] == "/octotrain/work/dataset" == env["DATASET_PATH"]
        assert env["CHECKPOINT"] == "/octotrain/work/checkpoint"  # the sidecar syncs it
        sync = containers(pod)["sync"]["command"]
        assert sync[sync.index("--run-id") + 1] == plan.run_id
        every = get_settings().checkpoint_sync_seconds
        assert float(sync[sync.index("--checkpoint-every") + 1]) == every
        assert env["LOG_LEVEL"] == "info"  # the algorithm's own variable
        assert env["MASTER_PORT"] == "29500"
        if nodes == 1:
            assert env["MASTER_ADDR"] == "127.0.0.1" and "subdomain" not in pod["spec"]
        else:
            service = service_name(plan)
            assert env["MASTER_ADDR"] == f"distributed-0.{service}.octotrain.svc.cluster.local"
            assert pod["spec"]["subdomain"] == service
        assert pod["spec"]["hostname"] == plan.node_indices[rank]
        labels = pod["metadata"]["labels"]
        assert labels["map_index"] == str(rank) and labels["octotrain.io/node"] == env["NODE_INDEX"]


def test_uploaded_code_is_the_node_s_code_folder_and_where_its_command_runs(
    rule_session: Session,
) -> None:
    plan = plan_of(rule_session, CPU_TASK, 2)  # linear-regression-numpy, its code v1
    assert plan.code is not None and plan.code.kind == "code"
    for pod in pods(plan):
        train = containers(pod)["base"]
        env = {item["name"]: item["value"] for item in train["env"]}
        assert env["CODE"] == "/octotrain/work/code" == train["workingDir"]
        # CODE, like DATASET, is a link into the node cache's view: mounted read-only
        cache = {"name": "octotrain-cache", "mountPath": "/octotrain/cache", "readOnly": True}
        assert cache in train["volumeMounts"]


def test_resources_user_priority_scheduling_and_mounts(rule_session: Session) -> None:
    [pod] = pods(plan_of(rule_session, GPU_TASK, 1))
    spec, parts = pod["spec"], containers(pod)
    base = parts["base"]
    assert base["image"] == "registry.example.com/team/image-algo:1.0"
    assert base["command"][:2] == ["python3", "/octotrain/agent/run_training.py"]
    separator = base["command"].index("--")
    assert base["command"][separator + 1 :] == [
        "/opt/algo/run", "--lr=0.5", "--optimizer=adam", "--shuffle=true", "--tag=x", "--n=3"
    ]  # fmt: skip
    assert base["resources"]["limits"] == {"cpu": "8", "memory": "65536Mi", "nvidia.com/gpu": "1"}
    # ma-user: the image's own user
    assert spec["securityContext"] == {"runAsNonRoot": True, "seccompProfile": RUNTIME_DEFAULT}
    assert spec["priorityClassName"] == "octotrain-high"
    assert spec["nodeSelector"] == {"octotrain.io/pool": "modelarts"}
    assert spec["tolerations"][0]["key"] == "nvidia.com/gpu"
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    assert volumes["octotrain-work"]["hostPath"]["path"].startswith("/mnt/nvme/octotrain/")
    assert volumes["octotrain-resource-mounts"]["persistentVolumeClaim"]["claimName"] == (
        "octotrain-datasets"
    )
    mount = next(m for m in base["volumeMounts"] if m["name"] == "octotrain-resource-mounts")
    assert mount == {
        "name": "octotrain-resource-mounts",
        "mountPath": "/octotrain/work/mounts/many_v1",
        "subPath": "datasets/demo/many/v1",
        "readOnly": True,
    }
    assert parts["stage"]["command"][:3] == ["octotrain", "node", "stage"]
    assert parts["sync"]["command"][:3] == ["octotrain", "node", "sync"]
    # The sidecar is a native one, after the stage container: Kubernetes stops it once the
    # training container has ended, which waits for its final upload.
    assert [c["name"] for c in spec["initContainers"]] == ["stage", "sync"]
    assert parts["sync"]["restartPolicy"] == "Always"
    assert base["command"][base["command"].index("--await-upload") + 1] == (
        "/octotrain/work/upload-done"
    )
    assert spec["restartPolicy"] == "Never"
    # The wrapper kills a training that ignores SIGTERM before the pod's grace period is over,
    # so that it can say so and the sidecar can still upload OUTPUT.
    wrapper_grace = float(base["command"][base["command"].index("--stop-grace-seconds") + 1])
    assert 1 <= wrapper_grace < spec["terminationGracePeriodSeconds"]


def test_a_cpu_task_runs_as_its_uid_with_a_normal_priority(rule_session: Session) -> None:
    [pod] = pods(plan_of(rule_session, CPU_TASK, 1))
    spec = pod["spec"]
    assert spec["securityContext"] == {
        "runAsUser": 1234, "runAsGroup": 1234, "fsGroup": 1234, "runAsNonRoot": True,
        "seccompProfile": RUNTIME_DEFAULT,
    }  # fmt: skip
    assert spec["priorityClassName"] == "octotrain-low"
    assert not spec.get("nodeSelector") and not spec.get("tolerations")
    assert containers(pod)["base"]["resources"]["limits"] == {"cpu": "1", "memory": "1024Mi"}
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    assert volumes["octotrain-work"] == {"name": "octotrain-work", "emptyDir": {}}


@pytest.mark.parametrize("task", [GPU_TASK, CPU_TASK], ids=["ma-user", "uid"])
def test_pods_meet_the_schema_and_the_restricted_profile_without_a_token(
    rule_session: Session, task: dict[str, Any]
) -> None:
    """Whether as ma-user or as the task's uid: no service-account token, every container
    restricted (non-root, no escalation, no capabilities, the runtime's seccomp profile), and
    nothing Kubernetes 1.29's schema does not know."""
    for pod in pods(plan_of(rule_session, task, 2)):
        assert pod["spec"]["automountServiceAccountToken"] is False
        assert schema_causes(pod) == []  # the real admission: test_launch_pod_real_api
        for container in containers(pod).values():
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}
            }  # fmt: skip


def test_a_root_task_runs_as_root_with_no_privilege_escalation(rule_session: Session) -> None:
    """uid 0 (the manual allows it) keeps the runtime's default capabilities but never
    escalates."""
    [pod] = pods(plan_of(rule_session, ROOT_TASK, 1))
    assert pod["spec"]["securityContext"] == {
        "runAsUser": 0, "runAsGroup": 0, "fsGroup": 0, "seccompProfile": RUNTIME_DEFAULT
    }  # fmt: skip
    assert containers(pod)["base"]["securityContext"] == {"allowPrivilegeEscalation": False}
    # What the real admission says of it, at each level: test_launch_pod_real_api.


def test_a_deferred_node_s_trigger_looks_at_its_pod_as_often_as_the_config_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pod_poll_seconds`` paces the triggerer's looks at a running pod (the provider's
    ``poll_interval``, which its trigger gets): each costs the triggerer a new API client."""
    assert node_operator().poll_interval == 2  # the shipped file's: the provider's default
    paced = tmp_path / "kubernetes.toml"
    paced.write_text("pod_poll_seconds = 10\n")
    monkeypatch.setenv("OCTOTRAIN_KUBERNETES_CONFIG_FILE", str(paced))
    get_settings.cache_clear()
    try:
        assert node_operator().poll_interval == 10
    finally:
        get_settings.cache_clear()


def node_operator() -> LaunchNodePodOperator:
    return LaunchNodePodOperator(task_id="launch", training_task_id=1, node_index="single-0")


def test_the_time_limits_are_the_wrapper_s_the_pod_s_deadline_and_the_schedule_timeout(
    rule_session: Session,
) -> None:
    plan = plan_of(rule_session, CPU_TASK | {"max_wait_seconds": 300,
                                             "max_training_seconds": 3600}, 1)  # fmt: skip
    operator = LaunchNodePodOperator(task_id="launch", training_task_id=plan.task_id,
                                     node_index="single-0")  # fmt: skip
    context = {"ti": _TaskInstance(plan, 0), "run_id": plan.run_id, "dag": object()}
    pod = ApiClient().sanitize_for_serialization(
        operator.build_pod_request_obj(context, dry_run=True)  # type: ignore[arg-type]
    )
    command = containers(pod)["base"]["command"]
    assert command[command.index("--max-training-seconds") + 1] == "3600"
    grace = int(get_settings().stop_grace_seconds)
    startup = operator.startup_timeout_seconds
    assert pod["spec"]["activeDeadlineSeconds"] == 3600 + startup + grace
    assert operator.schedule_timeout_seconds == 300
    unlimited = pods(plan_of(rule_session, CPU_TASK | {"name": "no-limits"}, 1))[0]
    assert "activeDeadlineSeconds" not in unlimited["spec"]
    assert "--max-training-seconds" not in containers(unlimited)["base"]["command"]


def test_the_algorithm_s_metric_definitions_reach_the_wrapper(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    definitions = [{"name": "损失", "regex": "loss=([0-9.e-]+)"}]
    Algorithms(rule_session, ADMIN, rule_store).update(
        "demo", "linear-regression-numpy", {"metric_definitions": definitions}
    )
    command = containers(pods(plan_of(rule_session, CPU_TASK, 1))[0])["base"]["command"]
    [extraction] = json.loads(command[command.index("--metric-extraction") + 1])
    assert extraction["regex"] == "loss=([0-9.e-]+)"
    assert extraction["meta"]["name"] == "损失"
    assert command.index("--metric-extraction") < command.index("--")


def test_with_kueue_a_run_s_pods_are_one_pod_group_in_the_project_s_queue(
    rule_session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``admission = "kueue"``: every node pod of a run names its project's LocalQueue, the
    run's pod group with the run's node count, and the WorkloadPriorityClass of
    the task's priority; it waits for admission as long as the task allows (here: no limit,
    so a week) instead of failing its start."""
    queued = tmp_path / "kubernetes.toml"
    queued.write_text('admission = "kueue"\n[kueue]\nlocal_queue = "team-{project}"\n'
                      '[[kueue.priority_classes]]\nminimum = -50\nname = "everyday"\n')  # fmt: skip
    monkeypatch.setenv("OCTOTRAIN_KUBERNETES_CONFIG_FILE", str(queued))
    get_settings.cache_clear()
    try:
        plan = plan_of(rule_session, CPU_TASK, 2)
        built = pods(plan)
        operator = node_operator()
        context = {"ti": _TaskInstance(plan, 0), "run_id": plan.run_id, "dag": object()}
        operator.build_pod_request_obj(context, dry_run=True)  # type: ignore[arg-type]
    finally:
        get_settings.cache_clear()
    assert operator.schedule_timeout_seconds == QUEUED_WAIT_SECONDS
    groups = {pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] for pod in built}
    assert len(groups) == 1  # the run's, whatever its restarts
    for pod in built:
        labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
        assert labels["kueue.x-k8s.io/queue-name"] == "team-demo"
        assert labels["kueue.x-k8s.io/priority-class"] == "everyday"
        assert annotations["kueue.x-k8s.io/pod-group-total-count"] == "2"


def test_without_admission_pods_name_no_queue(rule_session: Session) -> None:
    for pod in pods(plan_of(rule_session, CPU_TASK, 2)):
        assert not any(key.startswith("kueue.x-k8s.io/") for key in pod["metadata"]["labels"])
