"""When a deleted pod counts as left behind by its node (``octotrain.left_behind_pods``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from octotrain.left_behind_pods import LEFT_BEHIND_MARGIN, left_behind, left_behind_message

DUE = datetime(2026, 12, 6, 9, 0, 0, tzinfo=UTC)


def test_a_pod_not_deleted_is_never_left_behind() -> None:
    assert not left_behind(None, now=DUE + timedelta(days=1))


def test_a_deleted_pod_has_its_grace_period_and_the_margin() -> None:
    assert not left_behind(DUE, now=DUE - timedelta(seconds=5))  # in its grace period
    assert not left_behind(DUE, now=DUE + LEFT_BEHIND_MARGIN)  # a slow kubelet, still in time
    assert left_behind(DUE, now=DUE + LEFT_BEHIND_MARGIN + timedelta(seconds=1))


def test_the_message_names_the_pod_and_its_due_time() -> None:
    assert left_behind_message("train-3-distributed-1-ab", DUE) == (
        "pod train-3-distributed-1-ab was to be gone by 2026-12-06T09:00:00+00:00 but is still "
        "there: its Kubernetes node no longer answers; deleting it at once"
    )
