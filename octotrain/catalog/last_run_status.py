"""The status a training task is listed by: its last run's state, or ``never`` before its
first run. One definition for the REST list's ``status`` filter and the console's, so both
accept the same values and an unknown one is refused by name rather than matching nothing."""

from __future__ import annotations

import enum

from octotrain.catalog.models import RunState

NEVER_RUN = "never"

# Every run state (built from RunState, so a new state is accepted at once), and ``never``.
LastRunStatus = enum.StrEnum(
    "LastRunStatus", {**{state.name: state.value for state in RunState}, "NEVER": NEVER_RUN}
)
