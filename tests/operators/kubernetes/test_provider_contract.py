"""The cncf.kubernetes provider is an API Octotrain depends on, and this pins the part of it that
the node's launch task and trigger lean on: each method ``LaunchNodePodOperator`` overrides,
with the arguments it is called with and passes on; each attribute of the provider's operator
that it sets or reads; and what the provider's ``KubernetesPodTrigger`` serializes, which
``NodePodTrigger`` keeps and rebuilds the trigger from. A provider upgrade that changes one of
them fails here first, naming it (as ``tests/hooks/airflow/test_airflow_compat.py`` does for
Airflow's core)."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger

from operators.kubernetes.launch_pod import LaunchNodePodOperator
from operators.kubernetes.node_pod_trigger import CREDENTIAL_KWARGS, NodePodTrigger

# Each method of the provider's operator that the node's operator overrides, with the
# arguments by which the provider calls it and the override calls the provider's own.
OVERRIDDEN: dict[str, tuple[str, ...]] = {
    "build_pod_request_obj": ("context", "dry_run"),
    "get_or_create_pod": ("pod_request_obj", "context"),
    "execute": ("context",),
    "defer": ("trigger", "method_name", "kwargs", "timeout"),
    "trigger_reentry": ("context", "event"),
    "cleanup": ("pod", "remote_pod", "xcom_result", "context"),
    "on_kill": (),
}
# The provider's attributes the node's operator sets (its pod template, the pod's name, the
# scheduling timeout, whether logs are fetched, the pods it forgets for a restart) or reads.
ATTRIBUTES = ("pod_template_dict", "name", "schedule_timeout_seconds", "get_logs", "pod",
              "pod_request_obj", "remote_pod", "kubernetes_conn_id", "namespace")  # fmt: skip
# What KubernetesPodTrigger.serialize() gives, all of which NodePodTrigger keeps (the
# credentials among them blanked) and gives back to rebuild it in the triggerer.
TRIGGER_KWARGS = {
    "base_container_name", "cluster_context", "config_dict", "connection_extras", "get_logs",
    "in_cluster", "kubernetes_conn_id", "last_log_time", "logging_interval", "on_finish_action",
    "on_kill_action", "pod_name", "pod_namespace", "poll_interval", "schedule_timeout",
    "startup_check_interval", "startup_timeout", "termination_grace_period", "trigger_kwargs",
    "trigger_start_time",
}  # fmt: skip


def _own_methods_the_provider_has() -> set[str]:
    return {
        name
        for name, member in vars(LaunchNodePodOperator).items()
        if callable(member) and not name.startswith("__") and hasattr(KubernetesPodOperator, name)
    }


def test_the_overridden_methods_are_exactly_these() -> None:
    """A new override of a provider method is pinned here too."""
    assert _own_methods_the_provider_has() == set(OVERRIDDEN)


def test_each_overridden_method_still_takes_the_arguments_passed_and_requires_no_other() -> None:
    for name, arguments in OVERRIDDEN.items():
        parameters = inspect.signature(getattr(KubernetesPodOperator, name)).parameters
        missing = [argument for argument in arguments if argument not in parameters]
        assert not missing, f"KubernetesPodOperator.{name} takes no {missing} any more"
        required = {
            parameter
            for parameter, found in parameters.items()
            if found.default is inspect.Parameter.empty
            and found.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
            and parameter != "self"
        }
        assert required <= set(arguments), f"KubernetesPodOperator.{name} requires {required}"


def test_the_attributes_set_or_read_are_still_the_provider_s() -> None:
    operator = KubernetesPodOperator(task_id="pinned", image="python:3.11-slim")
    missing = [name for name in ATTRIBUTES if not hasattr(operator, name)]
    assert not missing, f"KubernetesPodOperator has no {missing} any more"
    assert "hook" in dir(KubernetesPodOperator)  # read for the pod (a cached property)


def _provider_trigger() -> KubernetesPodTrigger:
    return KubernetesPodTrigger(
        pod_name="train-1-distributed-0",
        pod_namespace="octotrain",
        trigger_start_time=datetime(2026, 12, 7, 9, 0, tzinfo=UTC),
        base_container_name="base",
        config_dict={"token": "secret"},
        connection_extras={"password": "secret"},
    )


def test_the_trigger_serializes_what_the_node_s_trigger_keeps_and_rebuilds_it() -> None:
    provider = _provider_trigger()
    classpath, kwargs = provider.serialize()
    assert classpath == "airflow.providers.cncf.kubernetes.triggers.pod.KubernetesPodTrigger"
    assert set(kwargs) == TRIGGER_KWARGS
    watching = NodePodTrigger.around(provider, run_prefix="runs/1/r", node_index="distributed-0",
                                     abort_check_seconds=1.0, grace_seconds=10)  # fmt: skip
    rebuilt = watching.pod_trigger.serialize()[1]
    expected = kwargs | dict.fromkeys(CREDENTIAL_KWARGS)  # no credential kept in the DB
    assert rebuilt == expected
