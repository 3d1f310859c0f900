"""``admission = "volcano"`` against the real API server with Volcano's published PodGroup CRD
(``tests/k8s_volcano.py``): a cluster without it fails the run's preparation, saying so; with
it, the run's PodGroup (every node, the project's Volcano Queue, the pods' priority class) is
accepted, every node pod names it and Volcano's scheduler and is accepted too, and the run's
teardown deletes the group."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowFailException
from kubernetes import client
from sqlalchemy.orm import Session

from hooks.kubernetes.kubernetes_runs import KubernetesRuns
from octotrain.kubernetes_config import kubernetes_config
from octotrain.pods import VOLCANO_API_GROUP, VOLCANO_VERSION, volcano_pod_group
from octotrain.settings import get_settings
from operators.kubernetes.prepare_pods import make_pod_group
from tests.k8s_control_plane import ControlPlane, create
from tests.k8s_volcano import podgroup_kind
from tests.operators.conftest import POD_CONN_ID, POD_NAMESPACE
from tests.operators.kubernetes.test_launch_pod import CPU_TASK, plan_of, pods

PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
VOLCANO_TOML = """admission = "volcano"
[volcano]
queue = "team-{project}"
[[priority_classes]]
minimum = -50
name = "octotrain-normal"
"""


def test_the_pod_group_and_its_pods_are_accepted_and_the_teardown_deletes_the_group(
    k8s_api: ControlPlane,
    pod_cluster: client.CoreV1Api,
    rule_session: Session,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config_file = tmp_path / "kubernetes.toml"
    config_file.write_text(VOLCANO_TOML)
    monkeypatch.setenv("OCTOTRAIN_KUBERNETES_CONFIG_FILE", str(config_file))
    get_settings.cache_clear()
    plan = plan_of(rule_session, CPU_TASK | {"name": "volcano-task"}, 2)
    group = volcano_pod_group(plan, kubernetes_config(), POD_NAMESPACE)
    runs = KubernetesRuns(conn_id=POD_CONN_ID, namespace=POD_NAMESPACE)
    with pytest.raises(AirflowFailException) as refused:
        make_pod_group(runs, group)
    assert (
        "Volcano is not installed in the cluster (it has no PodGroup kind: the CRD "
        "podgroups.scheduling.volcano.sh is missing)" in str(refused.value)
    )
    priority_class = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                      "metadata": {"name": "octotrain-normal"}, "value": 1000}  # fmt: skip
    create(k8s_api, PRIORITY_CLASSES, priority_class)
    try:
        with podgroup_kind(k8s_api):
            make_pod_group(runs, group)
            make_pod_group(runs, group)  # a retried preparation makes it once
            custom = client.CustomObjectsApi(pod_cluster.api_client)
            made = custom.get_namespaced_custom_object(
                VOLCANO_API_GROUP, VOLCANO_VERSION, POD_NAMESPACE, "podgroups",
                group["metadata"]["name"],
            )  # fmt: skip
            assert made["spec"] == {"minMember": 2, "queue": "team-demo",
                                    "priorityClassName": "octotrain-normal"}  # fmt: skip
            for pod in pods(plan):
                assert pod["spec"]["schedulerName"] == "volcano"
                annotations = pod["metadata"]["annotations"]
                assert annotations["scheduling.k8s.io/group-name"] == group["metadata"]["name"]
                pod["metadata"]["namespace"] = POD_NAMESPACE  # the tests' training namespace
                pod_cluster.create_namespaced_pod(POD_NAMESPACE, pod, dry_run="All")
            assert runs.delete_pod_group(group["metadata"]["name"])
            assert not runs.delete_pod_group(group["metadata"]["name"])
    finally:
        with k8s_api.client() as api:
            api.delete(f"{PRIORITY_CLASSES}/octotrain-normal")
