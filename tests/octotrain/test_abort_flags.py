"""Which flags are a user's stop (their nodes are skipped in Airflow, not failed)."""

from __future__ import annotations

import pytest

from octotrain.abort_flags import AbortFlag


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
