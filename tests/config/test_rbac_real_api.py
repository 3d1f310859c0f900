"""The launcher's RBAC (``config/kubernetes/rbac.yaml``) as a real kube-apiserver takes and
applies it: the documents are accepted as shipped, and the launcher's service accounts may make
exactly the calls its Role lists, in the training namespace only (SubjectAccessReview)."""

from __future__ import annotations

from typing import Any

import pytest

from octotrain.launcher_permissions import (
    KUEUE_PERMISSIONS,
    LAUNCHER_PERMISSIONS,
    VOLCANO_PERMISSIONS,
)
from tests.config.rbac import (
    KUEUE_RBAC_FILE,
    VOLCANO_RBAC_FILE,
    apply_shipped,
    grants,
    launcher_role,
)
from tests.k8s_control_plane import ControlPlane

NAMESPACE = "octotrain"
# Calls the launcher never makes, so the Role must not allow them.
NOT_GRANTED = [("", "pods", "watch"), ("", "pods/exec", "create"), ("", "secrets", "get"),
               ("", "secrets", "list"), ("", "configmaps", "create"), ("apps", "deployments",
               "create")]  # fmt: skip


@pytest.fixture(scope="module")
def applied(k8s_api: ControlPlane) -> list[dict[str, Any]]:
    """The shipped documents, created in the cluster (the Namespace first)."""
    return apply_shipped(k8s_api)


def _allowed(k8s_api: ControlPlane, user: str, namespace: str, grant: tuple[str, str, str]) -> bool:
    group, resource, verb = grant
    resource, _, subresource = resource.partition("/")
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user,
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{user.split(':')[2]}",
                       "system:authenticated"],
            "resourceAttributes": {"namespace": namespace, "group": group, "resource": resource,
                                   "subresource": subresource, "verb": verb},
        },
    }  # fmt: skip
    with k8s_api.client() as api:
        answer = api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
    assert answer.status_code == 201, answer.text
    return bool(answer.json()["status"].get("allowed"))


def _service_accounts(shipped: list[dict[str, Any]]) -> list[str]:
    [binding] = [document for document in shipped if document["kind"] == "RoleBinding"]
    return [f"system:serviceaccount:{subject['namespace']}:{subject['name']}"
            for subject in binding["subjects"]]  # fmt: skip


def test_the_launchers_accounts_may_make_each_call_of_the_role_in_its_namespace_only(
    k8s_api: ControlPlane, applied: list[dict[str, Any]]
) -> None:
    role = launcher_role()
    for user in _service_accounts(applied):
        for grant in sorted(grants(role)):
            assert _allowed(k8s_api, user, NAMESPACE, grant), (user, grant)
            assert not _allowed(k8s_api, user, "default", grant), (user, grant)
        for grant in NOT_GRANTED:
            assert not _allowed(k8s_api, user, NAMESPACE, grant), (user, grant)


def test_the_role_grants_exactly_what_the_launcher_checks_before_a_run() -> None:
    """``octotrain.launcher_permissions`` (checked by ``stage_data`` before a run creates
    anything) and the shipped Role are the same list."""
    checked = {(p.api_group, p.resource, p.verb) for p in LAUNCHER_PERMISSIONS}
    assert checked == grants(launcher_role())
    assert len(checked) == len(LAUNCHER_PERMISSIONS)  # no permission listed twice
    with_kueue = {(p.api_group, p.resource, p.verb) for p in KUEUE_PERMISSIONS}
    assert with_kueue == grants(launcher_role(KUEUE_RBAC_FILE))
    assert {p.granted_by for p in KUEUE_PERMISSIONS} == {"config/kubernetes/rbac-kueue.yaml"}
    with_volcano = {(p.api_group, p.resource, p.verb) for p in VOLCANO_PERMISSIONS}
    assert with_volcano == grants(launcher_role(VOLCANO_RBAC_FILE))
    assert {p.granted_by for p in VOLCANO_PERMISSIONS} == {"config/kubernetes/rbac-volcano.yaml"}
