"""The supplemental log's words for each way a node's pod ends abnormally, read from pods and
events in the Kubernetes API's shape and the wrapper's report: its first line says why."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from octotrain.exit_reports import ExitReport
from octotrain.pod_diagnosis import NodeEnd, diagnose
from octotrain.supplemental_log import SupplementalLog

END = NodeEnd(node_index="distributed-1", memory_limit_mib=512, startup_timeout_seconds=120)


def said(pod: dict[str, Any] | None, end: NodeEnd = END, events: Any = ()) -> SupplementalLog:
    log = diagnose(pod, list(events), end)
    assert log is not None
    return log


def pod(phase: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "status": {"phase": phase, **status}}


def train(state: dict[str, Any], image: str = "algo:1") -> dict[str, Any]:
    return {"name": "base", "image": image, "state": state}


def test_a_pod_that_succeeded_needs_no_supplemental_log() -> None:
    done = pod("Succeeded", containerStatuses=[train({"terminated": {"exitCode": 0}})])
    assert diagnose(done, [], END) is None


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (1, "exit code 1: the training program failed"),
        (127, "exit code 127: the command was not found"),
        (139, "exit code 139: segmentation fault"),
        (134, "exit code 134: killed by SIGABRT"),
    ],
)
def test_a_failed_training_names_its_exit_code_and_meaning(code: int, words: str) -> None:
    failed = pod("Failed", containerStatuses=[train({"terminated": {"exitCode": code}})])
    assert said(failed).reason.startswith(f"node distributed-1 failed with {words}")


def test_oom_names_the_limit_and_the_last_sampled_usage() -> None:
    killed = train({"terminated": {"exitCode": 137, "reason": "OOMKilled"}})
    end = NodeEnd(node_index="0", memory_limit_mib=512, last_memory_bytes=530 * 1024 * 1024)
    assert said(pod("Failed", containerStatuses=[killed]), end).reason == (
        "node 0 ran out of memory: it used more than its memory limit of 512 MiB and was killed "
        "(OOMKilled, exit code 137); the last sample used 530 MiB"
    )


def test_a_failed_init_container_points_at_the_init_log() -> None:
    stage = {"name": "stage", "state": {"terminated": {"exitCode": 3}}}
    assert said(pod("Failed", initContainerStatuses=[stage])).reason == (
        "node distributed-1 did not start: data preparation (init container stage) failed with "
        "exit code 3; see the init log"
    )


def test_a_failed_staging_says_why_from_the_init_log() -> None:
    stage = {"name": "stage", "state": {"terminated": {"exitCode": 1}}}
    init = "2025-01-01T00:00:00+0000 ERROR staging failed: the store is unreachable\n"
    end = NodeEnd(node_index="distributed-1", memory_limit_mib=512, init_log=init)
    assert said(pod("Failed", initContainerStatuses=[stage]), end).reason == (
        "node distributed-1 did not start: staging failed because the store is unreachable"
    )


def test_a_container_the_runtime_cannot_start_says_why() -> None:
    message = 'exec: "python3": executable file not found in $PATH: unknown'
    refused = train({"terminated": {"exitCode": 128, "reason": "StartError", "message": message}})
    assert said(pod("Failed", containerStatuses=[refused])).reason == (
        f"node distributed-1 failed to start because the container runtime could not run it "
        f"(StartError): {message}"
    )


def test_a_command_the_wrapper_cannot_run_says_why() -> None:
    failed = pod("Failed", containerStatuses=[train({"terminated": {"exitCode": 127}})])
    why = "its command '/opt/missing/python' could not be run (No such file or directory)"
    end = NodeEnd(
        node_index="distributed-1", memory_limit_mib=512,
        exit_report=ExitReport(exit_status=127, start_error=why),
    )  # fmt: skip
    assert said(failed, end).reason == f"node distributed-1 failed to start because {why}"


def test_an_unschedulable_pod_quotes_the_scheduler() -> None:
    message = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    pending = pod("Pending", conditions=[condition | {"message": message}])
    assert said(pending).reason == (
        "node distributed-1 did not start within 120s: the pod could not be scheduled "
        f"(Unschedulable): {message}"
    )


def test_a_failed_scheduling_event_is_used_when_the_pod_has_no_condition() -> None:
    events = [{"reason": "FailedScheduling", "message": "Insufficient cpu"}]
    assert "FailedScheduling: Insufficient cpu" in said(pod("Pending"), events=events).reason


def test_an_image_pull_failure_names_the_image() -> None:
    waiting = {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}
    pending = pod("Pending", containerStatuses=[train(waiting, image="registry/x:does-not-exist")])
    reason = said(pending).reason
    assert "the image registry/x:does-not-exist of container base could not be pulled" in reason
    assert "(ImagePullBackOff): not found" in reason


def test_a_container_that_cannot_be_created_quotes_kubernetes() -> None:
    waiting = {"waiting": {"reason": "CreateContainerConfigError", "message": "secret x not found"}}
    pending = pod("Pending", containerStatuses=[train(waiting)])
    assert said(pending).reason == (
        "node distributed-1 did not start within 120s: the container base could not be created "
        "(CreateContainerConfigError): secret x not found"
    )


def test_a_pull_failure_seen_only_in_events_is_reported() -> None:
    events = [{"reason": "Failed", "message": 'Failed to pull image "x": manifest unknown'}]
    assert "image pull failed: Failed to pull image" in said(pod("Pending"), events=events).reason


def test_an_evicted_pod_quotes_kubernetes() -> None:
    evicted = pod("Failed", reason="Evicted", message="The node was low on resource: memory.")
    assert said(evicted).reason == (
        "node distributed-1 was evicted by Kubernetes: The node was low on resource: memory."
    )


def test_a_stopped_node_says_why_and_how_it_ended() -> None:
    stopped = train({"terminated": {"exitCode": 143}})
    end = NodeEnd(node_index="0", memory_limit_mib=512, stop_reason="node 0 was stopped by alice")
    log = said(pod("Failed", containerStatuses=[stopped]), end)
    assert log.reason == "node 0 was stopped by alice"
    assert "exit code 143: terminated by SIGTERM" in log.render()


def test_a_stopped_node_that_ignored_sigterm_says_it_was_killed_after_the_grace_period() -> None:
    """Its pod is gone by then: the wrapper's report says what happened."""
    end = NodeEnd(
        node_index="0", memory_limit_mib=512, stop_reason="node 0 was stopped by alice",
        exit_report=ExitReport(exit_status=137, killed_after_grace_seconds=2.0),
    )  # fmt: skip
    log = said(None, end)
    assert log.reason == (
        "node 0 was stopped by alice; it ignored SIGTERM and was killed after the grace period "
        "of 2 s"
    )
    assert "OOM" not in log.render()


def test_a_pod_that_is_gone_is_judged_by_the_wrapper_s_report() -> None:
    end = NodeEnd(node_index="0", memory_limit_mib=512, exit_report=ExitReport(exit_status=3))
    assert said(None, end).reason.startswith("node 0 failed with exit code 3")


def test_a_pod_that_is_gone_is_said_to_be_gone() -> None:
    assert said(None).reason == (
        "node distributed-1 ended without a trace: its pod was never created or is gone"
    )


def test_a_failed_phase_without_statuses_still_says_something() -> None:
    assert said(pod("Failed", message="DeadlineExceeded")).reason == (
        "node distributed-1 ended abnormally: its pod ended in phase Failed: DeadlineExceeded"
    )


def test_a_failed_pod_whose_training_succeeded_still_says_something() -> None:
    done = train({"terminated": {"exitCode": 0}})
    failed = pod("Failed", containerStatuses=[done], message="the sidecar failed")
    assert said(failed).reason == (
        "node distributed-1 ended abnormally: its pod ended in phase Failed: the sidecar failed"
    )


TRAINING_LIMITED = {"name": "max_training_seconds", "seconds": 3600}


def test_a_training_stopped_at_its_time_limit_names_the_limit_whatever_its_status() -> None:
    """The wrapper stopped it (SIGTERM, grace) and exited 124; the training itself saved its
    checkpoint and exited 0."""
    end = replace(
        END,
        exit_report=ExitReport(exit_status=0, time_limit=TRAINING_LIMITED),
        checkpoint_synced=True,
    )
    ended = pod("Failed", containerStatuses=[train({"terminated": {"exitCode": 124}})])
    log = said(ended, end)
    assert log.reason == (
        "node distributed-1 reached its time limit: it trained for more than 3600 s "
        "(max_training_seconds); it was sent SIGTERM and given the grace period to save a "
        "checkpoint"
    )
    assert log.details == (
        "the run can be resumed from its last checkpoint (octotrain task resume)",
    )


def test_a_time_limit_without_a_synced_checkpoint_does_not_suggest_resuming() -> None:
    """``octotrain task resume`` refuses a run that left no checkpoint: the log says so."""
    end = replace(END, exit_report=ExitReport(exit_status=0, time_limit=TRAINING_LIMITED))
    ended = pod("Failed", containerStatuses=[train({"terminated": {"exitCode": 124}})])
    (detail,) = said(ended, end).details
    assert "resumed from" not in detail
    assert detail.startswith("no checkpoint was synced (nothing was written to CHECKPOINT)")


def test_a_pod_ended_at_its_deadline_names_the_training_limit_and_the_deadline() -> None:
    end = replace(END, max_training_seconds=3600, active_deadline_seconds=4330)
    ended = pod("Failed", reason="DeadlineExceeded", message="Pod was active too long")
    assert said(ended, end).reason.startswith(
        "node distributed-1 reached its time limit: it trained for more than 3600 s "
        "(max_training_seconds); Kubernetes ended its pod at the pod's deadline "
        "(activeDeadlineSeconds, 4330 s"
    )


def test_a_pod_unscheduled_past_the_wait_limit_names_it_and_quotes_the_scheduler() -> None:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}  # fmt: skip
    pending = pod("Pending", conditions=[condition])
    assert said(pending, replace(END, max_wait_seconds=600)).reason == (
        "node distributed-1 did not start: it waited for resources for more than 600 s "
        "(max_wait_seconds): the pod could not be scheduled (Unschedulable): 0/3 nodes are "
        "available: 3 Insufficient nvidia.com/gpu."
    )
