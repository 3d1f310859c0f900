"""Which flags are a user's stop (their nodes are skipped in Airflow, not failed), and the note
a user's stop leaves on the run's DAG run: who, when, what became of the run, after whatever
the note said before, within Airflow's limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from octotrain.abort_flags import AIRFLOW_NOTE_MAX_CHARS, AbortFlag, appended_note, stop_note


@pytest.mark.parametrize(
    ("flag", "by_user"),
    [
        (AbortFlag.stopped_by("alice"), True),
        (AbortFlag.stopped_by_airflow("distributed-0"), False),  # Airflow's own stop
        (AbortFlag.node_failed("distributed-0", "failed with exit code 3"), False),
        (AbortFlag.from_json("{not json"), False),  # unreadable: stop, as a failure
    ],
)
def test_only_a_user_s_stop_is_by_user(flag: AbortFlag, by_user: bool) -> None:
    assert flag.by_user is by_user


def test_the_note_says_who_stopped_the_run_when_in_utc_and_what_became_of_it() -> None:
    at = datetime(2026, 12, 3, 16, 26, 9, tzinfo=timezone(timedelta(hours=2)))
    note = stop_note(user="alice", at=at)
    assert note.startswith("**Stopped by alice** at 2026-12-03 14:26:09 UTC, through Octotrain")
    assert "launch skipped" in note and "archive_model skipped" in note
    assert "no model version was archived" in note and "as stopped" in note


def test_an_earlier_note_is_kept_before_it_within_airflow_s_limit() -> None:
    note = stop_note(user="alice", at=datetime.now(UTC))
    assert appended_note(None, note) == appended_note("", note) == note
    assert appended_note("retrain of #12", note) == f"retrain of #12\n\n{note}"
    long = appended_note("x" * AIRFLOW_NOTE_MAX_CHARS, note)
    assert len(long) == AIRFLOW_NOTE_MAX_CHARS and long.endswith(f"x…\n\n{note}")
