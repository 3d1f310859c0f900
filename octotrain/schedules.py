"""When a task retrains by itself: a cron schedule, judged as Airflow's cron timetable reads it.

Airflow accepts five-field cron expressions and a few ``@`` presets; anything else would only
fail when the DAG is parsed, so the task is refused when it is saved instead. Schedules are
read in UTC, Airflow's default timezone.
"""

from __future__ import annotations

from datetime import UTC, datetime

from croniter import CroniterBadDateError, croniter

# Airflow's cron presets (airflow.utils.dates.cron_presets), by the same names.
CRON_PRESETS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@quarterly": "0 0 1 */3 *",
    "@yearly": "0 0 1 1 *",
}
CRON_FIELDS = 5


def cron_problem(expression: str) -> str | None:
    """Why ``expression`` is not a schedule Airflow can run, or None when it is one."""
    if expression.startswith("@"):
        if expression in CRON_PRESETS:
            return None
        return f"unknown preset {expression!r}; use one of {', '.join(CRON_PRESETS)}"
    fields = expression.split()
    if len(fields) != CRON_FIELDS:
        return (
            "must be a cron expression of 5 fields (minute hour day-of-month month "
            f"day-of-week) or a preset such as @daily, got {len(fields)} fields"
        )
    if not croniter.is_valid(expression):
        return f"{expression!r} is not a valid cron expression"
    try:
        croniter(expression, datetime.now(UTC)).get_next(datetime)
    except CroniterBadDateError:
        return f"{expression!r} never fires (no such date)"
    return None


def next_fire(expression: str, after: datetime | None = None) -> datetime:
    """When a valid schedule next fires after ``after`` (default now), in UTC."""
    start = after or datetime.now(UTC)
    fired: datetime = croniter(CRON_PRESETS.get(expression, expression), start).get_next(datetime)
    return fired


def schedule_rule(expression: str) -> str:
    """The schedule rule as a pydantic validator."""
    problem = cron_problem(expression)
    if problem:
        raise ValueError(problem)
    return expression
