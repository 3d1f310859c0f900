"""The launcher's pods judged by a real kube-apiserver (``tests/k8s_control_plane.py``): its
schemas, defaults and the ``PodSecurity`` admission plugin, in the training namespace as
``config/kubernetes/rbac.yaml`` ships it (``restricted`` warned and audited, not enforced) and
in one that enforces ``restricted``. Created as a dry run: no node runs them here yet."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml
from sqlalchemy.orm import Session

from octotrain.settings import REPO_ROOT
from tests.config.rbac import documents
from tests.k8s_control_plane import ControlPlane
from tests.operators.kubernetes.test_launch_pod import CPU_TASK, GPU_TASK, ROOT_TASK, plan_of, pods

ENFORCED = "octotrain-restricted"
BASELINE = "octotrain-baseline"
# The PriorityClasses a cluster gets with the Helm values (the pods name them).
PRIORITY_CLASSES = REPO_ROOT / "config" / "helm" / "priority-classes.yaml"
ACCOUNT_SECONDS = 60.0


@pytest.fixture(scope="module")
def namespaces(k8s_api: ControlPlane) -> tuple[str, str]:
    """The shipped training namespace and one that enforces ``restricted``, each with its
    default service account, and the shipped PriorityClasses."""
    [shipped] = [document for document in documents() if document["kind"] == "Namespace"]
    labels = {"pod-security.kubernetes.io/enforce": "restricted"}
    enforced = {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ENFORCED, "labels": labels}}  # fmt: skip
    with k8s_api.client() as api:
        for namespace in (shipped, enforced):
            answer = api.post("/api/v1/namespaces", json=namespace)
            assert answer.status_code in (201, 409), answer.text
        for priority_class in yaml.safe_load_all(PRIORITY_CLASSES.read_text()):
            made = api.post("/apis/scheduling.k8s.io/v1/priorityclasses", json=priority_class)
            assert made.status_code in (201, 409), made.text
        # The controller-manager gives each namespace its default service account, which a
        # pod's admission looks up.
        deadline = time.monotonic() + ACCOUNT_SECONDS
        for name in (shipped["metadata"]["name"], ENFORCED):
            while api.get(f"/api/v1/namespaces/{name}/serviceaccounts/default").status_code != 200:
                assert time.monotonic() < deadline, f"no default service account in {name}"
                time.sleep(0.1)
    return shipped["metadata"]["name"], ENFORCED


def _dry_run(k8s_api: ControlPlane, namespace: str, pod: dict[str, Any]) -> Any:
    pod = pod | {"metadata": pod["metadata"] | {"namespace": namespace}}
    with k8s_api.client() as api:
        return api.post(f"/api/v1/namespaces/{namespace}/pods", params={"dryRun": "All"},
                        json=pod)  # fmt: skip


@pytest.mark.parametrize("task", [GPU_TASK, CPU_TASK], ids=["ma-user", "uid"])
def test_the_real_api_admits_the_pods_and_warns_only_of_their_host_folders(
    rule_session: Session, k8s_api: ControlPlane, namespaces: tuple[str, str], task: dict[str, Any]
) -> None:
    """Restricted but for the node cache and node-local work folders (``hostPath``), as the
    shipped namespace's labels say; an enforcing namespace refuses them for that alone."""
    shipped, enforced = namespaces
    for pod in pods(plan_of(rule_session, task, 2)):
        host_folders = [volume["name"] for volume in pod["spec"]["volumes"] if "hostPath" in volume]
        admitted = _dry_run(k8s_api, shipped, pod)
        assert admitted.status_code == 201, admitted.text
        warning = admitted.headers.get("Warning", "")
        assert "restricted volume types" in warning and all(n in warning for n in host_folders)
        refused = _dry_run(k8s_api, enforced, pod)
        assert refused.status_code == 403
        message = refused.json()["message"]
        assert message.endswith('use restricted volume type "hostPath")') or message.endswith(
            'uses restricted volume type "hostPath")'
        ), message


def test_a_root_task_is_refused_by_the_real_pod_security_admission_with_its_words(
    rule_session: Session, k8s_api: ControlPlane, namespaces: tuple[str, str]
) -> None:
    _shipped, enforced = namespaces
    [pod] = pods(plan_of(rule_session, ROOT_TASK, 1))
    answer = _dry_run(k8s_api, enforced, pod)
    assert answer.status_code == 403, answer.text
    message = answer.json()["message"]
    assert 'violates PodSecurity "restricted:latest"' in message
    assert "runAsNonRoot != true" in message and "runAsUser=0" in message


def test_a_root_task_meets_baseline_but_for_its_host_folders(
    rule_session: Session, k8s_api: ControlPlane, namespaces: tuple[str, str]
) -> None:
    """uid 0 (the manual allows it) keeps the runtime's default capabilities: a namespace that
    enforces ``baseline`` refuses it only for the node cache's hostPath (which such a namespace
    must leave empty: docs/concepts/kubernetes-launcher.md), not for its user."""
    labels = {"pod-security.kubernetes.io/enforce": "baseline"}
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": BASELINE, "labels": labels}}  # fmt: skip
    with k8s_api.client() as api:
        answer = api.post("/api/v1/namespaces", json=namespace)
        assert answer.status_code in (201, 409), answer.text
        deadline = time.monotonic() + ACCOUNT_SECONDS
        while api.get(f"/api/v1/namespaces/{BASELINE}/serviceaccounts/default").status_code != 200:
            assert time.monotonic() < deadline, f"no default service account in {BASELINE}"
            time.sleep(0.1)
    [pod] = pods(plan_of(rule_session, ROOT_TASK, 1))
    answer = _dry_run(k8s_api, BASELINE, pod)
    assert answer.status_code == 403, answer.text
    assert answer.json()["message"].endswith(
        'violates PodSecurity "baseline:latest": hostPath volumes (volume "octotrain-cache")'
    )
