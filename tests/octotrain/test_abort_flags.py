"""Which flags are a user's stop, the line a user's stop leaves as the run's message (who,
when, how far), and the note it leaves on the run's DAG run: who, when, why Airflow shows it
failed, after whatever the note said before, within Airflow's limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from octotrain.abort_flags import AIRFLOW_NOTE_MAX_CHARS, AbortFlag, appended_note, stop_note
from octotrain.node_progress import NodeProgress, Phase, RunProgress


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
    assert note.startswith("**Stopped by alice** at 2026-12-03 14:26:09 UTC through Octotrain")
    assert "Airflow has no stopped state, so this run shows as failed" in note
    assert "no model version was archived" in note and "as stopped" in note


AT = datetime(2026, 12, 6, 9, 8, 43, tzinfo=UTC)


def _progress(*nodes: tuple[float | None, float | None]) -> RunProgress:
    shown = [NodeProgress(f"distributed-{index}", Phase.DONE, current=current, total=total)
             for index, (current, total) in enumerate(nodes)]  # fmt: skip
    return RunProgress(Phase.DONE, None, None, shown)


@pytest.mark.parametrize(
    ("progress", "summary"),
    [
        (_progress((39.0, 100.0), (41.0, 100.0)),
         "Stopped by admin at 2026-12-06 09:08:43 after 39 of 100 steps"),  # the least advanced
        (_progress((7.5, None)), "Stopped by admin at 2026-12-06 09:08:43 after 7.5 steps"),
        (_progress((None, None)),
         "Stopped by admin at 2026-12-06 09:08:43 before its training reported any progress"),
        (None, "Stopped by admin at 2026-12-06 09:08:43"),
    ],
)  # fmt: skip
def test_a_user_s_stop_reads_as_one_line_who_when_and_how_far(
    progress: RunProgress | None, summary: str
) -> None:
    flag = AbortFlag.from_json(AbortFlag.stopped_by("admin", at=AT).to_json())
    assert flag.stop_summary(progress) == summary


def test_a_flag_raised_before_stops_had_a_time_still_reads() -> None:
    flag = AbortFlag.from_json('{"reason": "stopped by admin", "stopped": true}')
    assert flag.by_user and flag.stop_summary(None) == "Stopped by admin"


def test_an_earlier_note_is_kept_before_it_within_airflow_s_limit() -> None:
    note = stop_note(user="alice", at=datetime.now(UTC))
    assert appended_note(None, note) == appended_note("", note) == note
    assert appended_note("retrain of #12", note) == f"retrain of #12\n\n{note}"
    long = appended_note("x" * AIRFLOW_NOTE_MAX_CHARS, note)
    assert len(long) == AIRFLOW_NOTE_MAX_CHARS and long.endswith(f"x…\n\n{note}")
