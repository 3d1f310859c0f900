"""A task's hang detection: the setting and its rules, the wrapper's options, and what the
supplemental log says of a node stopped as hung, locally and from a pod."""

from __future__ import annotations

from typing import Any

import pytest

from octotrain.documents import parse_document
from octotrain.errors import InvalidInput
from octotrain.exit_codes import HUNG_EXIT_STATUS, describe_exit_code
from octotrain.exit_reports import ExitReport
from octotrain.hang_detection import HangDetection, HungNode, wrapper_arguments
from octotrain.pod_diagnosis import NodeEnd, diagnose
from octotrain.supplemental_log import NodeEnding, explain
from octotrain.task_spec import TaskSpec

VALID = {
    "project": "demo",
    "name": "n",
    "resource_spec": "s",
    "algorithm": "a",
    "model_repository": "m",
}
HUNG_REPORT = {"silent_seconds": 1805.3, "hang_after_seconds": 1800}


def problems(document: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(InvalidInput) as refused:
        parse_document(TaskSpec, VALID | document)
    return [(problem.field, problem.rule) for problem in refused.value.problems]


def test_hang_detection_is_off_unless_the_task_sets_it() -> None:
    assert parse_document(TaskSpec, VALID).hang_detection is None
    spec = parse_document(TaskSpec, VALID | {"hang_detection": {"after_seconds": 1800}})
    assert spec.hang_detection == HangDetection(after_seconds=1800, stop_when_hung=False)
    assert spec.stored()["hang_detection"] == {"after_seconds": 1800, "stop_when_hung": False}


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ({"after_seconds": 0}, "hang_detection.after_seconds"),
        ({"after_seconds": 2592001}, "hang_detection.after_seconds"),
        ({"after_seconds": "600"}, "hang_detection.after_seconds"),
        ({"stop_when_hung": True}, "hang_detection.after_seconds"),
        ({"after_seconds": 600, "stop_when_hung": "yes"}, "hang_detection.stop_when_hung"),
        ({"after_seconds": 600, "stop": True}, "hang_detection.stop"),
    ],
)
def test_a_bad_setting_is_refused_naming_the_field(setting: dict[str, Any], field: str) -> None:
    found = problems({"hang_detection": setting})
    assert [name for name, _rule in found] == [field], found


def test_the_wrapper_is_told_the_threshold_and_whether_to_stop() -> None:
    assert wrapper_arguments(None, stop_when_hung=False, report="h.json") == []
    assert wrapper_arguments(600, stop_when_hung=False, report="h.json") == [
        "--hang-after-seconds", "600", "--hang-report", "h.json",
    ]  # fmt: skip
    assert wrapper_arguments(600, stop_when_hung=True, report="h.json") == [
        "--hang-after-seconds", "600", "--stop-when-hung", "--hang-report", "h.json",
    ]  # fmt: skip


def test_the_wrapper_s_report_is_read_and_anything_else_is_no_hang() -> None:
    assert HungNode.from_json(HUNG_REPORT) == HungNode(1805.3, 1800)
    assert HungNode.from_json(None) is None
    assert HungNode.from_json({"exit_status": 0}) is None


def test_a_node_stopped_as_hung_says_so_first_with_its_class_and_what_to_do() -> None:
    log = explain(NodeEnding("single-0", exit_code=0, hung=HungNode(1805.3, 1800)))
    assert log is not None
    assert log.reason == (
        "node single-0 was stopped as hung: its log and metrics did not advance for 1805 s while "
        "its process was alive (hang_detection.after_seconds: 1800); it was sent SIGTERM and "
        "given the grace period to save a checkpoint"
    )
    assert log.details[0].startswith("failure class hung: not retried")


def test_a_hung_node_that_ignored_sigterm_says_it_was_killed_after_the_grace() -> None:
    ending = NodeEnding(
        "single-0", exit_code=137, killed_after_grace_seconds=20, hung=HungNode(65, 60)
    )
    log = explain(ending)
    assert log is not None
    assert log.reason.endswith("; it ignored SIGTERM and was killed after the grace period of 20 s")


def test_the_hung_exit_status_has_its_meaning() -> None:
    assert describe_exit_code(HUNG_EXIT_STATUS) == (
        "stopped as hung by its wrapper: its log and metrics had stopped advancing"
    )


def test_a_pod_whose_wrapper_stopped_it_as_hung_is_explained_so() -> None:
    """Kubernetes shows the wrapper's exit status (122); its report, uploaded by the sidecar,
    says how long the training had been silent."""
    end = NodeEnd(
        node_index="distributed-1",
        memory_limit_mib=512,
        exit_report=ExitReport(exit_status=0, hung=HUNG_REPORT),
    )
    terminated = {"terminated": {"exitCode": HUNG_EXIT_STATUS, "reason": "Error"}}
    pod = {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "base", "image": "algo:1", "state": terminated}],
        },
    }
    log = diagnose(pod, [], end)
    assert log is not None
    assert log.reason.startswith(
        "node distributed-1 was stopped as hung: its log and metrics did not advance for 1805 s"
    )


def test_a_pod_that_exited_hung_without_a_report_still_names_the_meaning() -> None:
    """The report may be lost (the sidecar's upload failed): the exit status alone says it."""
    end = NodeEnd(node_index="distributed-1", memory_limit_mib=512)
    terminated = {"terminated": {"exitCode": HUNG_EXIT_STATUS}}
    pod = {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "base", "image": "algo:1", "state": terminated}],
        },
    }
    log = diagnose(pod, [], end)
    assert log is not None
    assert log.reason == (
        "node distributed-1 failed with exit code 122: stopped as hung by its wrapper: its log "
        "and metrics had stopped advancing"
    )
