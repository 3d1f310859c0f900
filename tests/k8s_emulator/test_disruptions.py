"""Disruptions a test scripts on the emulator: the kubelet's eviction, the scheduler's
preemption and the node's loss, as Kubernetes 1.29 shows them (the ``DisruptionTarget``
condition, a kept pod ``Failed`` with reason ``Evicted`` or ``NodeLost``, a deleted one gone),
read with the real kubernetes client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from octotrain.failure_classes import FailureClass, pod_end_class
from tests.k8s_emulator import KubernetesEmulator
from tests.k8s_emulator.test_emulator import NAMESPACE, python_pod, running_log, wait_for


@pytest.fixture
def core(k8s_emulator: KubernetesEmulator, tmp_path: Path) -> Iterator[client.CoreV1Api]:
    """The kubernetes client, configured from the emulator's kubeconfig."""
    kubeconfig = k8s_emulator.write_kubeconfig(tmp_path / "kubeconfig")
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.CoreV1Api(api_client)
    api_client.close()


# Saves its state on SIGTERM and exits 0, as a training that checkpoints on a stop does.
CHECKPOINTS_ON_SIGTERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: (print('saved', flush=True), sys.exit(0)))\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


def _running(core: client.CoreV1Api, name: str) -> None:
    core.create_namespaced_pod(NAMESPACE, python_pod(name, CHECKPOINTS_ON_SIGTERM))
    wait_for(lambda: running_log(core, name))


def _as_api_dict(pod: client.V1Pod) -> dict[str, Any]:
    return client.ApiClient().sanitize_for_serialization(pod)


def _condition(pod: client.V1Pod, kind: str) -> client.V1PodCondition | None:
    return next((c for c in pod.status.conditions or [] if c.type == kind), None)


def test_an_evicted_pod_gets_its_grace_period_and_stays_failed_as_evicted(
    core: client.CoreV1Api,
    k8s_emulator: KubernetesEmulator,
) -> None:
    _running(core, "evicted")
    k8s_emulator.evict("evicted", NAMESPACE, grace_seconds=20)
    pod = wait_for(lambda: _failed(core, "evicted"))
    assert (pod.status.reason, pod.status.message) == (
        "Evicted", "The node was low on resource: memory."
    )  # fmt: skip
    disruption = _condition(pod, "DisruptionTarget")
    assert disruption is not None
    assert (disruption.status, disruption.reason) == ("True", "TerminationByKubelet")
    assert "saved" in core.read_namespaced_pod_log("evicted", NAMESPACE)  # SIGTERM came first
    # Failed although its container exited 0: what the kubelet's eviction does.
    assert pod.status.container_statuses[0].state.terminated.exit_code == 0
    assert pod_end_class(_as_api_dict(pod), stopped=False, time_limited=False) is (
        FailureClass.LOST
    )


def test_a_preempted_pod_is_marked_then_deleted_with_its_grace_period(
    core: client.CoreV1Api, k8s_emulator: KubernetesEmulator
) -> None:
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "print('ready', flush=True)\ntime.sleep(60)\n"
    core.create_namespaced_pod(NAMESPACE, python_pod("preempted", code))
    wait_for(lambda: running_log(core, "preempted"))
    k8s_emulator.preempt("preempted", NAMESPACE, grace_seconds=2)
    # Marked, and terminating for its grace period (it ignores SIGTERM) ...
    pod = core.read_namespaced_pod("preempted", NAMESPACE)
    disruption = _condition(pod, "DisruptionTarget")
    assert disruption is not None
    assert disruption.reason == "PreemptionByScheduler"
    assert pod.metadata.deletion_timestamp is not None
    # ... then killed and deleted.
    wait_for(lambda: not k8s_emulator.pods(NAMESPACE))


@pytest.mark.parametrize("keep_pods", [False, True])
def test_a_lost_node_kills_every_pod_at_once(
    core: client.CoreV1Api,
    k8s_emulator: KubernetesEmulator,
    keep_pods: bool,
) -> None:
    _running(core, "first")
    _running(core, "second")
    k8s_emulator.lose_node(keep_pods=keep_pods)
    if not keep_pods:
        wait_for(lambda: not k8s_emulator.pods(NAMESPACE))
    else:
        for name in ("first", "second"):
            pod = wait_for(lambda name=name: _failed(core, name))
            assert pod.status.reason == "NodeLost"
            assert "saved" not in core.read_namespaced_pod_log(name, NAMESPACE)  # no grace
            end = pod_end_class(_as_api_dict(pod), stopped=False, time_limited=False)
            assert end is FailureClass.LOST
    # A node that replaced it runs the next pods.
    _running(core, "after")


def _failed(core: client.CoreV1Api, name: str) -> client.V1Pod | None:
    pod = core.read_namespaced_pod(name, NAMESPACE)
    return pod if pod.status.phase == "Failed" else None
