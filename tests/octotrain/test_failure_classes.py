"""Failure classes of a node's end (``octotrain.failure_classes``): what Kubernetes or the
local launcher says of it decides whether the run's nodes are started again."""

from __future__ import annotations

from typing import Any

import pytest

from octotrain.failure_classes import FailureClass, local_end_class, pod_end_class, pod_loss


def _pod(
    phase: str = "Failed",
    *,
    reason: str = "",
    conditions: list[dict[str, Any]] | None = None,
    base: dict[str, Any] | None = None,
    init: dict[str, Any] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "conditions": conditions or []}
    if reason:
        status |= {"reason": reason, "message": f"the pod was {reason.lower()}"}
    if base is not None:
        status["containerStatuses"] = [{"name": "base", "state": base}]
    if init is not None:
        status["initContainerStatuses"] = [{"name": "stage", "state": init}]
    return {"status": status}


def _exited(code: int, reason: str = "Error") -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": reason}}


DISRUPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
             "message": "preempted by a pod of higher priority"}  # fmt: skip
# Kueue evicting a preempted workload: it deletes the pods with this condition.
EVICTED_BY_KUEUE = {"type": "TerminationTarget", "status": "True",
                    "reason": "WorkloadEvictedDueToPreempted",
                    "message": "Preempted to accommodate a workload (UID: 1) due to "
                               "prioritization in the ClusterQueue"}  # fmt: skip
DRAINED = DISRUPTED | {"reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (_pod(reason="Evicted", base=_exited(137)), FailureClass.LOST),
        (_pod(conditions=[DISRUPTED], base=_exited(143)), FailureClass.PREEMPTED),
        (_pod(conditions=[EVICTED_BY_KUEUE], base=_exited(143)), FailureClass.PREEMPTED),
        (_pod(conditions=[DRAINED], base=_exited(143)), FailureClass.LOST),
        (_pod(reason="NodeLost"), FailureClass.LOST),
        (None, FailureClass.LOST),  # gone without a word: deleted, or its node collected
        (_pod("Unknown"), FailureClass.LOST),  # its node stopped answering
        (_pod(base=_exited(1)), FailureClass.TRAINING),
        (_pod(base=_exited(137, "Error")), FailureClass.LOST),  # SIGKILL, not at its limit
        (_pod(base=_exited(137, "OOMKilled")), FailureClass.OUT_OF_MEMORY),
        (_pod(base=_exited(128, "StartError")), FailureClass.START),
        (_pod(init=_exited(2)), FailureClass.START),  # data preparation: bad input
        (_pod("Pending"), FailureClass.START),
    ],
)
def test_a_pod_s_end_is_classed_by_what_kubernetes_says(
    pod: dict[str, Any] | None, expected: FailureClass
) -> None:
    assert pod_end_class(pod, stopped=False, time_limited=False) is expected
    assert expected.retried is (expected in (FailureClass.LOST, FailureClass.PREEMPTED))
    assert expected.counted is (expected is FailureClass.LOST)


def test_a_disruption_condition_not_true_is_no_loss() -> None:
    pod = _pod(conditions=[DISRUPTED | {"status": "False"}], base=_exited(1))
    assert pod_loss(pod) is None
    assert pod_end_class(pod, stopped=False, time_limited=False) is FailureClass.TRAINING


def test_a_loss_is_said_in_kubernetes_words() -> None:
    assert pod_loss(_pod(conditions=[DISRUPTED])) == (
        "PreemptionByScheduler: preempted by a pod of higher priority"
    )
    assert pod_loss(_pod(reason="Evicted")) == "Evicted: the pod was evicted"


@pytest.mark.parametrize(
    ("message", "lost"),
    [
        ("rpc error: dial tcp 10.0.0.1:443: i/o timeout", True),
        ("unexpected status: 503 Service Unavailable", True),
        ("manifest for octotrain/train:v9 not found: manifest unknown", False),
        ("pull access denied, repository does not exist or may require authorization", False),
    ],
)
def test_only_an_image_pull_that_failed_for_the_moment_is_a_loss(message: str, lost: bool) -> None:
    waiting = {"waiting": {"reason": "ErrImagePull", "message": message}}
    pod = _pod("Pending", base=waiting)
    expected = FailureClass.LOST if lost else FailureClass.START
    assert pod_end_class(pod, stopped=False, time_limited=False) is expected


def test_a_pod_its_wrapper_stopped_as_hung_is_hung_by_its_report_or_its_exit_status() -> None:
    reported = _pod(base=_exited(0, "Completed"))  # the stopped training exited 0
    assert pod_end_class(reported, stopped=False, time_limited=False, hung=True) is (
        FailureClass.HUNG
    )
    assert pod_end_class(_pod(base=_exited(122)), stopped=False, time_limited=False) is (
        FailureClass.HUNG
    )
    assert not FailureClass.HUNG.retried


def test_a_stop_or_a_time_limit_is_never_a_loss() -> None:
    evicted = _pod(reason="Evicted")
    assert pod_end_class(evicted, stopped=True, time_limited=False) is FailureClass.STOPPED
    assert pod_end_class(evicted, stopped=False, time_limited=True) is FailureClass.TIME_LIMIT


_LOCAL = {"exit_code": 1, "wrapper_reported": True, "stopped": False, "out_of_memory": False,
          "time_limited": False, "hung": False, "start_error": False}  # fmt: skip


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        ({}, FailureClass.TRAINING),
        # The training killed with no stop and no out-of-memory kill recorded: from outside.
        ({"exit_code": 137}, FailureClass.LOST),
        ({"exit_code": -9}, FailureClass.LOST),
        ({"exit_code": 139}, FailureClass.TRAINING),  # its own segmentation fault
        ({"exit_code": 137, "wrapper_reported": False}, FailureClass.LOST),
        ({"exit_code": 1, "wrapper_reported": False}, FailureClass.TRAINING),  # no signal
        ({"exit_code": 137, "wrapper_reported": False, "stopped": True}, FailureClass.STOPPED),
        ({"exit_code": 137, "out_of_memory": True}, FailureClass.OUT_OF_MEMORY),
        ({"exit_code": 143, "time_limited": True}, FailureClass.TIME_LIMIT),
        ({"exit_code": 122, "hung": True}, FailureClass.HUNG),
        ({"exit_code": 127, "start_error": True}, FailureClass.START),
    ],
)
def test_a_local_node_s_end_is_classed_by_its_process_and_its_wrapper_s_report(
    facts: dict[str, Any], expected: FailureClass
) -> None:
    assert local_end_class(**(_LOCAL | facts)) is expected


def test_only_a_lost_or_preempted_node_is_retried_and_only_a_lost_one_counted() -> None:
    retried = [failure for failure in FailureClass if failure.retried]
    assert retried == [FailureClass.LOST, FailureClass.PREEMPTED]
    assert [failure for failure in FailureClass if failure.counted] == [FailureClass.LOST]
    assert FailureClass.HUNG == "hung"


@pytest.mark.parametrize(
    ("staging_error", "expected"),
    [
        ("cannot download runs/7/stage.json at s3://bucket after 5 attempts: timed out",
         FailureClass.LOST),
        ("cannot read datasets/d/v1/a.csv at s3://bucket: cut off 5 times (reset)",
         FailureClass.LOST),
        ("dataset house-prices v9 does not exist", FailureClass.START),
        (None, FailureClass.START),
    ],
)  # fmt: skip
def test_data_preparation_that_found_the_store_unreachable_is_a_loss(
    staging_error: str | None, expected: FailureClass
) -> None:
    pod = _pod(init=_exited(1))
    end = pod_end_class(pod, stopped=False, time_limited=False, staging_error=staging_error)
    assert end is expected
