"""The Kubernetes launcher: resource mounts need a volume on the resource spec, named in
config/mount_volumes.toml, or the run fails in ``validate`` naming the spec before anything
starts."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from hooks.pod_launcher import check_mount_volume
from octotrain.errors import InvalidInput
from tests.operators.test_launch_pod import GPU_TASK, plan_of


def test_mounts_on_a_spec_with_a_known_volume_pass(rule_session: Session) -> None:
    check_mount_volume(plan_of(rule_session, GPU_TASK, 1))


def test_mounts_on_a_spec_without_a_volume_are_refused(rule_session: Session) -> None:
    plan = plan_of(rule_session, GPU_TASK, 1)
    assert plan.resources is not None
    bare = plan.model_copy(
        update={"resources": plan.resources.model_copy(update={"mount_volume": ""})}
    )
    with pytest.raises(InvalidInput, match="resource_spec: 'modelarts-gpu' names no mount_volume"):
        check_mount_volume(bare)


def test_a_volume_gone_from_the_config_is_named(rule_session: Session) -> None:
    plan = plan_of(rule_session, GPU_TASK, 1)
    assert plan.resources is not None
    gone = plan.model_copy(
        update={"resources": plan.resources.model_copy(update={"mount_volume": "old-nfs"})}
    )
    with pytest.raises(InvalidInput, match=r"mount_volume 'old-nfs' .* is not in"):
        check_mount_volume(gone)
