"""The launchers record when each node held its resources (``operators.node_holds``): a pod
from its own status, a local node from its process's start to its end."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator
from airflow.sdk.exceptions import AirflowFailException
from kubernetes.client import models as k8s
from sqlalchemy import select

from hooks.storage.catalog import CatalogHook
from octotrain.catalog.models import NodeHold, Run, RunState, as_utc
from octotrain.planning import NodeResources, RunPlan
from octotrain.storage import ObjectStore
from operators.kubernetes.launch_pod import LaunchNodePodOperator
from operators.local.launch_local import LaunchLocalNodeOperator
from operators.node_holds import pod_held_span
from tests.factories import seed

START = datetime(2026, 11, 10, 8, 0, tzinfo=UTC)


def _terminated(name: str, finished: datetime) -> k8s.V1ContainerStatus:
    state = k8s.V1ContainerState(
        terminated=k8s.V1ContainerStateTerminated(exit_code=0, finished_at=finished)
    )
    return k8s.V1ContainerStatus(
        name=name, image="i", image_id="", ready=False, restart_count=0, state=state
    )


def _pod(status: k8s.V1PodStatus | None) -> k8s.V1Pod:
    return k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="train-1-single-0"), status=status)


def test_a_pod_holds_from_its_start_on_a_node_to_its_last_container_s_end() -> None:
    status = k8s.V1PodStatus(
        start_time=START,
        init_container_statuses=[_terminated("stage", START + timedelta(minutes=5))],
        container_statuses=[
            _terminated("training", START + timedelta(hours=2)),
            _terminated("sidecar", START + timedelta(hours=2, minutes=1)),
        ],
    )
    assert pod_held_span(_pod(status)) == (START, START + timedelta(hours=2, minutes=1))


def test_a_pod_still_running_holds_until_now_and_one_never_scheduled_holds_nothing() -> None:
    running = k8s.V1ContainerStatus(
        name="training", image="i", image_id="", ready=True, restart_count=0,
        state=k8s.V1ContainerState(running=k8s.V1ContainerStateRunning(started_at=START)),
    )  # fmt: skip
    span = pod_held_span(_pod(k8s.V1PodStatus(start_time=START, container_statuses=[running])))
    assert span is not None and span[0] == START
    assert datetime.now(UTC) - span[1] < timedelta(minutes=1)
    assert pod_held_span(_pod(k8s.V1PodStatus(phase="Pending"))) is None
    assert pod_held_span(_pod(None)) is None


class _TaskInstance:
    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan

    def xcom_pull(self, *, task_ids: str, key: str) -> dict[str, Any]:
        return self.plan.model_dump(mode="json")


def _plan(task_id: int, run_id: int, code: str) -> RunPlan:
    return RunPlan.model_validate(
        {
            "task_id": task_id, "task_name": "t", "project": "demo", "run_id": "manual__r",
            "run_key": "r-1", "catalog_run_id": run_id, "node_indices": ["single-0"],
            "master_addr": "127.0.0.1", "master_port": 29500, "image": "i",
            "command": [sys.executable, "-c", code], "parameters": {}, "env": {},
            "run_as_user": "1000",
            "resources": NodeResources(spec="s", kind="cce", cpu=1, memory_mib=512, gpu_count=0),
            "data_inputs": [], "input_models": [], "mounts": [], "output_repository_id": 1,
            "output_repository": "m", "lineage": {},
        }
    )  # fmt: skip


def _running_run(catalog: CatalogHook, task_id: int) -> int:
    with catalog.session() as session:
        run = Run(task_id=task_id, airflow_run_id="manual__r", state=RunState.RUNNING, node_count=1)
        session.add(run)
        session.flush()
        return run.id


def _holds(catalog: CatalogHook, run_id: int) -> list[NodeHold]:
    with catalog.session() as session:
        return list(session.scalars(select(NodeHold).where(NodeHold.run_id == run_id)))


def test_a_local_node_holds_from_its_process_s_start_to_its_end(
    octotrain_env: Path, catalog: CatalogHook, store: ObjectStore
) -> None:
    demo = seed(catalog, store)
    run_id = _running_run(catalog, demo.task_id)
    plan = _plan(demo.task_id, run_id, "print('trained')")
    operator = LaunchLocalNodeOperator(
        task_id="launch", training_task_id=demo.task_id, node_index="single-0"
    )
    operator.layout(plan).logs_dir.mkdir(parents=True, exist_ok=True)  # as stage_data leaves it
    before = datetime.now(UTC)
    operator.execute({"ti": _TaskInstance(plan)})  # type: ignore[arg-type]
    [hold] = _holds(catalog, run_id)
    assert hold.node_index == "single-0" and hold.ended_at is not None
    assert before <= as_utc(hold.started_at) <= as_utc(hold.ended_at) <= datetime.now(UTC)


def test_a_pod_s_hold_is_recorded_when_it_ends_and_when_its_stop_took_it_down(
    octotrain_env: Path, catalog: CatalogHook, store: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = seed(catalog, store)
    run_id = _running_run(catalog, demo.task_id)
    context = {"ti": _TaskInstance(_plan(demo.task_id, run_id, ""))}
    operator = LaunchNodePodOperator(
        task_id="launch", training_task_id=demo.task_id, node_index="single-0"
    )
    ended = k8s.V1PodStatus(
        phase="Failed",
        start_time=START,
        container_statuses=[_terminated("training", START + timedelta(hours=1))],
    )
    cleaned: list[str] = []  # the provider's own cleanup (deleting the pod) still follows
    monkeypatch.setattr(
        KubernetesPodOperator, "cleanup", lambda _self, pod, *_a, **_k: cleaned.append(pod)
    )
    operator.cleanup(_pod(ended), _pod(ended), context=context)  # type: ignore[arg-type]
    assert len(cleaned) == 1
    stopped = LaunchNodePodOperator(
        task_id="launch", training_task_id=demo.task_id, node_index="distributed-1"
    )
    event = {"status": "stopped", "name": "train-1-distributed-1", "namespace": "octotrain",
             "message": "stopped by alice",
             "held_since": START.isoformat()}  # fmt: skip
    with pytest.raises(AirflowFailException):
        stopped.trigger_reentry(context, event)  # type: ignore[arg-type]
    holds = {hold.node_index: hold for hold in _holds(catalog, run_id)}
    assert as_utc(holds["single-0"].started_at) == START
    assert as_utc(holds["single-0"].ended_at) == START + timedelta(hours=1)  # type: ignore[arg-type]
    assert as_utc(holds["distributed-1"].started_at) == START
    assert as_utc(holds["distributed-1"].ended_at) > START + timedelta(days=1)  # type: ignore[arg-type]
