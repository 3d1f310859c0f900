"""The supplemental log's words for each way a node's pod ends abnormally, read from pods and
events in the Kubernetes API's shape."""

from __future__ import annotations

from typing import Any

import pytest

from octotrain.pod_diagnosis import NodeEnd, diagnose

END = NodeEnd(node_index="distributed-1", memory_limit_mib=512, startup_timeout_seconds=120)


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
    text = diagnose(failed, [], END)
    assert text is not None
    assert text.startswith("abnormal end of node distributed-1\n") and words in text


def test_oom_names_the_limit_and_the_last_sampled_usage() -> None:
    killed = train({"terminated": {"exitCode": 137, "reason": "OOMKilled"}})
    end = NodeEnd(node_index="0", memory_limit_mib=512, last_memory_bytes=530 * 1024 * 1024)
    text = diagnose(pod("Failed", containerStatuses=[killed]), [], end)
    assert text is not None
    assert "OOMKilled" in text and "memory limit of 512 MiB" in text
    assert "the last sample used 530 MiB" in text and "exit code 137" in text


def test_a_failed_init_container_points_at_the_init_log() -> None:
    stage = {"name": "stage", "state": {"terminated": {"exitCode": 3}}}
    text = diagnose(pod("Failed", initContainerStatuses=[stage]), [], END)
    assert text is not None
    assert "data preparation (init container stage) failed with exit code 3" in text


def test_an_unschedulable_pod_quotes_the_scheduler() -> None:
    message = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    pending = pod("Pending", conditions=[condition | {"message": message}])
    text = diagnose(pending, [], END)
    assert text is not None
    assert "did not start within 120s" in text
    assert f"could not be scheduled (Unschedulable): {message}" in text


def test_a_failed_scheduling_event_is_used_when_the_pod_has_no_condition() -> None:
    events = [{"reason": "FailedScheduling", "message": "Insufficient cpu"}]
    text = diagnose(pod("Pending"), events, END)
    assert text is not None and "FailedScheduling: Insufficient cpu" in text


def test_an_image_pull_failure_names_the_image() -> None:
    waiting = {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}
    pending = pod("Pending", containerStatuses=[train(waiting, image="registry/x:does-not-exist")])
    text = diagnose(pending, [], END)
    assert text is not None
    assert "the image registry/x:does-not-exist of container base could not be pulled" in text
    assert "(ImagePullBackOff): not found" in text


def test_a_pull_failure_seen_only_in_events_is_reported() -> None:
    events = [{"reason": "Failed", "message": 'Failed to pull image "x": manifest unknown'}]
    text = diagnose(pod("Pending"), events, END)
    assert text is not None and "image pull failed: Failed to pull image" in text


def test_an_evicted_pod_quotes_kubernetes() -> None:
    evicted = pod("Failed", reason="Evicted", message="The node was low on resource: memory.")
    text = diagnose(evicted, [], END)
    assert text is not None
    assert "evicted by Kubernetes: The node was low on resource: memory." in text


def test_a_stopped_node_says_why_and_how_it_ended() -> None:
    stopped = train({"terminated": {"exitCode": 143}})
    end = NodeEnd(node_index="0", memory_limit_mib=512, stopped_because="stopped by alice")
    text = diagnose(pod("Failed", containerStatuses=[stopped]), [], end)
    assert text is not None
    assert "node 0 was stopped: stopped by alice" in text
    assert "exit code 143: terminated by SIGTERM" in text


def test_a_pod_that_is_gone_is_said_to_be_gone() -> None:
    text = diagnose(None, [], END)
    assert text is not None and "its pod was never created or is gone" in text


def test_a_failed_phase_without_statuses_still_says_something() -> None:
    text = diagnose(pod("Failed", message="DeadlineExceeded"), [], END)
    assert text is not None and "the pod ended in phase Failed: DeadlineExceeded" in text
