"""The parts of the cncf.kubernetes provider the Kubernetes launcher builds on. Airflow governs
a published operator's parameters and behaviour by semantic versioning, not its methods
("public in behavior but not in structure"), so each method ``LaunchNodePodOperator`` overrides
must keep its provider's signature, and each one it or ``NodePodTrigger`` calls must still take
what they pass: a provider upgrade that changes one fails here first, by name."""

from __future__ import annotations

import inspect

import pytest
from airflow.providers.cncf.kubernetes.hooks.kubernetes import AsyncKubernetesHook, KubernetesHook
from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger

from operators.kubernetes.launch_pod import LaunchNodePodOperator

OVERRIDDEN = sorted(
    name
    for name, member in vars(LaunchNodePodOperator).items()
    if callable(member) and not name.startswith("_") and hasattr(KubernetesPodOperator, name)
)


def parameter_names(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", OVERRIDDEN)
def test_an_overridden_method_keeps_the_provider_s_signature(method: str) -> None:
    """The provider's parameters, in order; an override may add only optional keyword-only
    ones (``trigger_reentry``'s ``start``, passed through the deferral's kwargs), which every
    call the provider makes still satisfies."""
    ours, theirs = getattr(LaunchNodePodOperator, method), getattr(KubernetesPodOperator, method)
    provider = parameter_names(theirs)
    assert parameter_names(ours)[: len(provider)] == provider
    extra = list(inspect.signature(ours).parameters.values())[len(provider) :]
    for parameter in extra:
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, parameter
        assert parameter.default is not inspect.Parameter.empty, parameter


def test_the_overrides_checked_are_the_ones_the_launcher_relies_on() -> None:
    assert {"build_pod_request_obj", "get_or_create_pod", "execute", "defer",
            "trigger_reentry", "on_kill"} <= set(OVERRIDDEN)  # fmt: skip


def test_the_provider_methods_the_launcher_calls_take_what_it_passes() -> None:
    assert parameter_names(KubernetesPodOperator.find_pod)[:3] == ["self", "namespace", "context"]
    assert parameter_names(KubernetesHook.get_pod) == ["self", "name", "namespace"]
    assert KubernetesPodOperator.POD_CHECKED_KEY == "already_checked"


def test_the_provider_s_trigger_offers_what_the_node_s_trigger_uses() -> None:
    for name in ("serialize", "run", "on_kill"):
        assert callable(getattr(KubernetesPodTrigger, name)), name
    assert {"pod_name", "pod_namespace"} <= set(inspect.signature(KubernetesPodTrigger).parameters)
    assert hasattr(KubernetesPodTrigger, "hook")  # an AsyncKubernetesHook:
    for method in (AsyncKubernetesHook.get_pod, AsyncKubernetesHook.delete_pod):
        assert {"name", "namespace"} <= set(parameter_names(method)), method.__qualname__
