"""A run's life has one owner: queued, running, then one end with its time and, unless it
succeeded, its reason; the first end stays."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session

from octotrain.catalog.models import Run, RunState, TrainingTask
from octotrain.run_lifecycle import (
    end_run,
    find_run,
    note_active_run,
    record_triggered,
    record_validated,
)
from octotrain.tasks import Tasks
from tests.factories import ADMIN, VALID_TASK


@pytest.fixture
def task(rule_session: Session) -> TrainingTask:
    return Tasks(rule_session, ADMIN).create(VALID_TASK | {"name": "lifecycle"})


def validated(session: Session, task: TrainingTask, run_id: str, **changes: Any) -> Run:
    options: dict[str, Any] = {"triggered_by": "alice", "trigger": "manual", "node_count": 2,
                               "plan": {"run_key": "k"}, "refused": None} | changes  # fmt: skip
    return record_validated(session, task.id, run_id, **options)


def test_a_triggered_run_is_queued_once_then_validate_takes_the_same_row(
    rule_session: Session, task: TrainingTask
) -> None:
    first = record_triggered(rule_session, task.id, "request__a", triggered_by="bob", node_count=1)
    again = record_triggered(rule_session, task.id, "request__a", triggered_by="bob", node_count=1)
    assert first.id == again.id and first.state == RunState.QUEUED and first.ended_at is None
    running = validated(rule_session, task, "request__a")
    assert running.id == first.id and running.state == RunState.RUNNING
    assert (running.triggered_by, running.node_count) == ("bob", 2)
    assert find_run(rule_session, task.id, "request__a") is running
    assert find_run(rule_session, task.id, "request__other") is None


def test_a_run_refused_by_validate_has_ended_with_its_time_and_reason(
    rule_session: Session, task: TrainingTask
) -> None:
    run = validated(rule_session, task, "manual__1", refused="algorithm: gone")
    assert run.state == RunState.FAILED and run.ended_at is not None
    assert run.message == "validation failed: algorithm: gone"
    rule_session.flush()
    assert run.started_at <= run.ended_at  # it ended after it started, not a moment before


def test_the_first_end_stays_and_every_end_has_its_time(
    rule_session: Session, task: TrainingTask
) -> None:
    run = validated(rule_session, task, "manual__2")
    assert end_run(rule_session, run, state=RunState.STOPPED, reason="stopped by alice")
    assert not end_run(
        rule_session, task_id=task.id, airflow_run_id="manual__2", state=RunState.FAILED,
        reason="Airflow ended the run failed",
    )  # fmt: skip
    rule_session.refresh(run)
    assert (run.state, run.message) == (RunState.STOPPED, "stopped by alice")
    assert run.ended_at is not None


@pytest.mark.parametrize(
    ("state", "reason", "words"),
    [
        (RunState.FAILED, "", "needs the reason"),
        (RunState.STOPPED, "", "needs the reason"),
        (RunState.SUCCESS, "", "names its model version"),
        (RunState.RUNNING, "x", "not running"),
    ],
)
def test_an_end_without_its_reason_is_refused(
    rule_session: Session, task: TrainingTask, state: RunState, reason: str, words: str
) -> None:
    run = validated(rule_session, task, "manual__3")
    with pytest.raises(ValueError, match=words):
        end_run(rule_session, run, state=state, reason=reason)
    with pytest.raises(ValueError, match="name the run"):
        end_run(rule_session, state=RunState.FAILED, reason="x")


def test_a_running_run_shows_a_note_until_it_is_withdrawn_and_its_end_reason_stays(
    rule_session: Session, task: TrainingTask
) -> None:
    run = validated(rule_session, task, "manual__note")
    hung = "node single-0 looks hung"
    assert note_active_run(rule_session, run.id, note=hung)
    assert not note_active_run(rule_session, run.id, note="another note")  # the first stays
    assert run.message == hung
    assert note_active_run(rule_session, run.id, note="", replacing=hung)
    assert run.message == ""
    note_active_run(rule_session, run.id, note=hung)
    end_run(rule_session, run, state=RunState.FAILED, reason="node single-0 was stopped as hung")
    assert not note_active_run(rule_session, run.id, note="", replacing=hung)
    assert run.message == "node single-0 was stopped as hung"
