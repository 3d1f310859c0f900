"""A run's restarts after a lost node (``octotrain.restarts``) and the task's limit of them."""

from __future__ import annotations

import pytest

from octotrain.documents import parse_document
from octotrain.errors import InvalidInput
from octotrain.failure_classes import FailureClass
from octotrain.restarts import MAX_RUN_RESTARTS, RunRestart, restart_due, what_was_done
from octotrain.task_spec import TaskSpec
from tests.octotrain.test_task_spec import VALID


def test_a_restart_request_reads_back_as_written_and_a_torn_one_as_none() -> None:
    restart = RunRestart(1, "distributed-1", "Evicted: the node was low on memory")
    assert RunRestart.from_json(restart.to_json()) == restart
    preempted = RunRestart(2, "distributed-0", "WorkloadEvicted: preempted", counted=False)
    assert RunRestart.from_json(preempted.to_json()) == preempted
    older = '{"attempt": 1, "node": "distributed-1", "reason": "Evicted"}'  # before "counted"
    assert RunRestart.from_json(older) == RunRestart(1, "distributed-1", "Evicted")
    assert RunRestart.from_json(restart.to_json()[:-3]) is None
    assert RunRestart.from_json('{"attempt": "one", "node": "x", "reason": ""}') is None


def test_only_a_lost_node_within_the_limit_asks_for_a_restart() -> None:
    assert restart_due(FailureClass.LOST, attempt=0, counted=0, max_restarts=2)
    assert restart_due(FailureClass.LOST, attempt=1, counted=1, max_restarts=2)
    assert not restart_due(FailureClass.LOST, attempt=2, counted=2, max_restarts=2)
    assert not restart_due(FailureClass.LOST, attempt=0, counted=0, max_restarts=0)
    for failure in set(FailureClass) - {FailureClass.LOST, FailureClass.PREEMPTED}:
        assert not restart_due(failure, attempt=0, counted=0, max_restarts=2)


def test_a_preemption_restarts_the_run_whatever_the_limit_and_is_not_counted() -> None:
    assert restart_due(FailureClass.PREEMPTED, attempt=0, counted=0, max_restarts=0)
    assert restart_due(FailureClass.PREEMPTED, attempt=5, counted=2, max_restarts=2)
    # After three preemptions, a lost node still has the task's two restarts.
    assert restart_due(FailureClass.LOST, attempt=3, counted=0, max_restarts=2)
    assert not restart_due(FailureClass.PREEMPTED, attempt=MAX_RUN_RESTARTS, counted=0,
                           max_restarts=2)  # fmt: skip
    assert what_was_done(FailureClass.PREEMPTED, attempt=0, max_restarts=0) == (
        "failure class preempted: the run was preempted for other work; it is started again "
        "from its checkpoint once it is admitted again (not counted against max_node_restarts)"
    )
    preempted = RunRestart(1, "distributed-0", "WorkloadEvicted: preempted", counted=False)
    assert "not counted against max_node_restarts" in preempted.in_words(2)
    lost = RunRestart(3, "distributed-1", "Evicted")
    assert lost.in_words(2, counted_so_far=1).endswith("(restart 1 of at most 2)")


def test_the_supplemental_log_says_the_class_and_what_was_done() -> None:
    assert what_was_done(FailureClass.LOST, attempt=0, max_restarts=2).endswith(
        "; restart 1 of at most 2"
    )
    assert what_was_done(FailureClass.LOST, attempt=2, max_restarts=2).endswith(
        "not restarted: the run's 2 restarts were all used"
    )
    assert what_was_done(FailureClass.LOST, attempt=0, max_restarts=0).endswith(
        "not restarted: the task's max_node_restarts is 0"
    )
    assert what_was_done(FailureClass.OUT_OF_MEMORY, attempt=0, max_restarts=2) == (
        "failure class out_of_memory: the training ran out of memory (not retried)"
    )


def test_a_task_restarts_its_nodes_twice_unless_it_says_otherwise() -> None:
    assert parse_document(TaskSpec, VALID).node_restarts == 2
    assert "max_node_restarts" not in parse_document(TaskSpec, VALID).stored()
    assert parse_document(TaskSpec, VALID | {"max_node_restarts": 0}).node_restarts == 0


@pytest.mark.parametrize("value", [-1, 21, "2", 1.5, True])
def test_a_restart_limit_out_of_its_range_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_document(TaskSpec, VALID | {"max_node_restarts": value})
    assert "max_node_restarts" in str(refused.value)
