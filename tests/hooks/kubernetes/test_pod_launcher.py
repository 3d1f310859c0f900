"""The Kubernetes launcher: resource mounts need a volume on the resource spec, named in
config/mount_volumes.toml, and a task that runs as root a namespace declared baseline, or the
run fails in ``validate`` naming the field before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from hooks.kubernetes.pod_launcher import check_mount_volume, check_pod_security
from octotrain.errors import InvalidInput
from octotrain.settings import get_settings
from tests.operators.kubernetes.test_launch_pod import CPU_TASK, GPU_TASK, ROOT_TASK, plan_of


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


def test_a_root_task_is_refused_in_a_restricted_namespace(
    rule_session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uid 0 breaks the restricted Pod Security profile: the run fails in ``validate``, naming
    the field and the setting, instead of at the API server; a baseline namespace takes it."""
    root = plan_of(rule_session, ROOT_TASK, 1)
    check_pod_security(plan_of(rule_session, CPU_TASK, 1))
    with pytest.raises(InvalidInput, match=r"run_as_uid: 0 \(root\) breaks the restricted"):
        check_pod_security(root)
    baseline = tmp_path / "kubernetes.toml"
    baseline.write_text('pod_security = "baseline"\n')
    monkeypatch.setenv("OCTOTRAIN_KUBERNETES_CONFIG_FILE", str(baseline))
    get_settings.cache_clear()
    try:
        check_pod_security(root)
    finally:
        get_settings.cache_clear()


def test_a_sweep_s_trials_at_once_must_fit_the_project_s_cluster_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With Kueue, ``concurrency`` trials' nodes together are judged against the ClusterQueue
    behind the project's LocalQueue (``check_kueue_queue``, tested against a real API); without
    a queue there is no quota to judge."""
    from hooks.kubernetes import kubernetes_access
    from hooks.kubernetes.pod_launcher import PodLauncher
    from octotrain.admission import Demand

    judged: list[dict[str, object]] = []

    def check(runs: object, *, queue: str, project: str, asked: dict[str, float]) -> None:
        judged.append(asked | {"queue": queue, "project": project})
        if asked["cpu"] > 8:
            raise kubernetes_access.LauncherAccessError("ClusterQueue team-a can give at most 8")

    monkeypatch.setattr(kubernetes_access, "check_kueue_queue", check)
    demand = Demand.of(nodes=2, cores_per_node=1.5, memory_mib_per_node=512)
    assert PodLauncher().concurrency_refusal("demo", demand, 4) is None  # no admission: no quota
    queued = tmp_path / "kubernetes.toml"
    queued.write_text('admission = "kueue"\n[kueue]\nlocal_queue = "training"\n')
    monkeypatch.setenv("OCTOTRAIN_KUBERNETES_CONFIG_FILE", str(queued))
    get_settings.cache_clear()
    try:
        assert PodLauncher().concurrency_refusal("demo", demand, 2) is None
        refused = PodLauncher().concurrency_refusal("demo", demand, 3)
    finally:
        get_settings.cache_clear()
    assert refused == "3 runs at once: ClusterQueue team-a can give at most 8"
    assert judged == [
        {"cpu": 6.0, "memory": 2 * 1024 * 2**20, "queue": "training", "project": "demo"},
        {"cpu": 9.0, "memory": 3 * 1024 * 2**20, "queue": "training", "project": "demo"},
    ]
