"""The emulator enforces Pod Security Admission as a namespace's level says: every rule of the
``restricted`` profile refuses a pod that breaks it (403, PSA's words, the field), a namespace
declared ``baseline`` lets the restricted-only rules pass and still refuses baseline's."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.k8s_emulator import KubernetesEmulator
from tests.k8s_emulator.pod_security import (
    RESTRICTED_CONTAINER_CONTEXT,
    RESTRICTED_POD_CONTEXT,
)

RESTRICTED_NS = "training"
BASELINE_NS = "legacy"
Breaking = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.CoreV1Api]:
    root = tmp_path_factory.mktemp("pod-security")
    with KubernetesEmulator(root=root, pod_security={BASELINE_NS: "baseline"}) as emulator:
        api_client = config.new_client_from_config(
            config_file=str(emulator.write_kubeconfig(Path(root) / "kubeconfig"))
        )
        yield client.CoreV1Api(api_client)
        api_client.close()


def compliant(name: str) -> dict[str, Any]:
    """A pod (an init container, a sidecar, a main container) that meets ``restricted``; it
    never starts (its image does not exist), which these tests do not need."""

    def container(name: str, **extra: Any) -> dict[str, Any]:
        context = copy.deepcopy(RESTRICTED_CONTAINER_CONTEXT)
        return {"name": name, "image": "does-not-exist:1", "command": ["true"],
                "securityContext": context, **extra}  # fmt: skip

    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": copy.deepcopy(RESTRICTED_POD_CONTEXT),
            "initContainers": [container("stage"), container("sync", restartPolicy="Always")],
            "containers": [container("base")],
        },
    }


def _context(pod: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return pod["spec"]["containers"][index]["securityContext"]


# rule (PSA's words), how a pod breaks it, the field named, and whether baseline refuses it too.
RULES: list[tuple[str, Breaking, str, bool]] = [
    ("allowPrivilegeEscalation != false",
     lambda pod: _context(pod).pop("allowPrivilegeEscalation"),
     "spec.containers[0].securityContext.allowPrivilegeEscalation", False),
    ("allowPrivilegeEscalation != false",
     lambda pod: pod["spec"]["initContainers"][1]["securityContext"].update(
         allowPrivilegeEscalation=True),
     "spec.initContainers[1].securityContext.allowPrivilegeEscalation", False),
    ("unrestricted capabilities",
     lambda pod: _context(pod).pop("capabilities"),
     "spec.containers[0].securityContext.capabilities.drop", False),
    ("unrestricted capabilities",
     lambda pod: _context(pod)["capabilities"].update(add=["CHOWN"]),
     "spec.containers[0].securityContext.capabilities.add", False),
    ("runAsNonRoot != true",
     lambda pod: pod["spec"]["securityContext"].pop("runAsNonRoot"),
     "spec.containers[0].securityContext.runAsNonRoot", False),
    ("runAsNonRoot != true",
     lambda pod: _context(pod).update(runAsNonRoot=False),
     "spec.containers[0].securityContext.runAsNonRoot", False),
    ("runAsUser=0",
     lambda pod: pod["spec"]["securityContext"].update(runAsUser=0),
     "spec.securityContext.runAsUser", False),
    ("runAsUser=0",
     lambda pod: _context(pod).update(runAsUser=0),
     "spec.containers[0].securityContext.runAsUser", False),
    ("seccompProfile",
     lambda pod: pod["spec"]["securityContext"].pop("seccompProfile"),
     "spec.containers[0].securityContext.seccompProfile.type", False),
    ("seccompProfile",
     lambda pod: _context(pod).update(seccompProfile={"type": "Unconfined"}),
     "spec.containers[0].securityContext.seccompProfile.type", True),
    ("host namespaces",
     lambda pod: pod["spec"].update(hostNetwork=True), "spec.hostNetwork", True),
    ("host namespaces", lambda pod: pod["spec"].update(hostPID=True), "spec.hostPID", True),
    ("host namespaces", lambda pod: pod["spec"].update(hostIPC=True), "spec.hostIPC", True),
    ("privileged",
     lambda pod: _context(pod).update(privileged=True),
     "spec.containers[0].securityContext.privileged", True),
    ("non-default capabilities",
     lambda pod: _context(pod)["capabilities"].update(add=["SYS_ADMIN"]),
     "spec.containers[0].securityContext.capabilities.add", True),
    ("hostPort",
     lambda pod: pod["spec"]["containers"][0].update(
         ports=[{"containerPort": 8080, "hostPort": 8080}]),
     "spec.containers[0].ports[0].hostPort", True),
    ("procMount",
     lambda pod: _context(pod).update(procMount="Unmasked"),
     "spec.containers[0].securityContext.procMount", True),
    ("forbidden sysctls",
     lambda pod: pod["spec"]["securityContext"].update(
         sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
     "spec.securityContext.sysctls[0].name", True),
]  # fmt: skip


def test_a_compliant_pod_is_accepted_in_either_namespace(core: client.CoreV1Api) -> None:
    for namespace in (RESTRICTED_NS, BASELINE_NS):
        created = core.create_namespaced_pod(namespace, compliant("fine"))
        assert created.metadata.name == "fine"


@pytest.mark.parametrize(("rule", "breaking", "field", "baseline_too"), RULES)
def test_each_rule_refuses_the_pod_that_breaks_it(
    core: client.CoreV1Api, rule: str, breaking: Breaking, field: str, baseline_too: bool
) -> None:
    pod = compliant("breaking")
    breaking(pod)
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(RESTRICTED_NS, pod)
    assert refused.value.status == 403
    status = _status(refused.value)
    assert status["reason"] == "Forbidden"
    assert 'violates PodSecurity "restricted:v1.29"' in status["message"]
    assert rule in status["message"]
    assert {"reason": "FieldValueForbidden", "message": rule, "field": field} in status["details"][
        "causes"
    ]
    if baseline_too:
        with pytest.raises(ApiException) as refused_there:
            core.create_namespaced_pod(BASELINE_NS, pod)
        assert 'violates PodSecurity "baseline:v1.29"' in _status(refused_there.value)["message"]
    else:
        core.create_namespaced_pod(BASELINE_NS, pod)
        core.delete_namespaced_pod("breaking", BASELINE_NS, grace_period_seconds=0)


def _status(error: ApiException) -> dict[str, Any]:
    return dict(json.loads(error.body))
