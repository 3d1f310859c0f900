"""Cron schedules as Airflow's cron timetable reads them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from octotrain.schedules import CRON_PRESETS, cron_problem, next_fire


@pytest.mark.parametrize("expression", ["0 3 * * *", "*/5 * * * 1-5", "0 0 29 2 *", *CRON_PRESETS])
def test_valid_schedules(expression: str) -> None:
    assert cron_problem(expression) is None


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("* * *", "5 fields"),
        ("0 0 * * * *", "got 6 fields"),
        ("61 * * * *", "not a valid cron"),
        ("a b c d e", "not a valid cron"),
        ("0 0 31 2 *", "never fires"),
        ("@once", "unknown preset"),
    ],
)
def test_invalid_schedules_say_why(expression: str, words: str) -> None:
    assert words in (cron_problem(expression) or "")


def test_next_fire_is_in_utc_and_reads_presets() -> None:
    after = datetime(2026, 12, 2, 21, 0, tzinfo=UTC)
    assert next_fire("@daily", after) == datetime(2026, 12, 3, 0, 0, tzinfo=UTC)
    assert next_fire("30 22 * * *", after) == datetime(2026, 12, 2, 22, 30, tzinfo=UTC)
