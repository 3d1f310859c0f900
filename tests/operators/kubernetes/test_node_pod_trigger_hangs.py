"""A deferred launch task's trigger (``operators.kubernetes.node_pod_trigger``) with hang detection:
at each look at the run's abort flag it reads the node's hang report where the pod's sidecar keeps
it, and the task's log (the triggerer's log of a deferred task is part of it) says once that
the node looks hung, then that it advances again. Against the tests' real control plane,
the trigger rebuilt from its serialized form through JSON."""

from __future__ import annotations

import asyncio
import importlib
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger
from kubernetes import client

from hooks.runs.run_abort import RunAbortMarker
from hooks.storage.object_store import default_object_store
from octotrain.abort_flags import AbortFlag
from octotrain.run_layout import RunObjects
from operators.kubernetes.node_pod_trigger import NodePodTrigger
from tests.operators.conftest import POD_CONN_ID, POD_NAMESPACE, start_pod
from tests.stored_run_files import run_files_of, store_text

RUN_PREFIX = "runs/7/manual__x"
NODE = "distributed-1"
DEADLINE_SECONDS = 60
REPORT = {"silent_seconds": 61.0, "hang_after_seconds": 60}


def watching_hangs(pod_name: str) -> NodePodTrigger:
    inner = KubernetesPodTrigger(
        pod_name=pod_name, pod_namespace=POD_NAMESPACE,
        trigger_start_time=datetime.now(UTC), base_container_name="base",
        kubernetes_conn_id=POD_CONN_ID, poll_interval=0.2, startup_check_interval=1,
        startup_timeout=30, on_finish_action="delete_succeeded_pod", termination_grace_period=2,
    )  # fmt: skip
    trigger = NodePodTrigger.around(
        inner, run_prefix=RUN_PREFIX, node_index=NODE, abort_check_seconds=0.2,
        grace_seconds=2, catalog_run_id=0, watch_hangs=True,
    )  # fmt: skip
    classpath, kwargs = trigger.serialize()
    module, _, name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module), name)(**json.loads(json.dumps(kwargs)))
    assert isinstance(rebuilt, NodePodTrigger) and rebuilt.watch_hangs
    return rebuilt


async def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "the trigger never saw it"
        await asyncio.sleep(0.05)


def test_the_trigger_says_when_the_pod_s_node_looks_hung_and_when_it_advances(
    pod_cluster: client.CoreV1Api, capfd: pytest.CaptureFixture[str]
) -> None:
    store, key = default_object_store(), RunObjects.from_prefix(RUN_PREFIX).hang_report(NODE)
    start_pod(pod_cluster, "silent", "import time; print('epoch 0', flush=True); time.sleep(120)")
    trigger = watching_hangs("silent")

    async def hang_then_advance_then_stop() -> dict[str, Any]:
        watched = asyncio.ensure_future(anext(trigger.run()))
        await asyncio.to_thread(store_text, store, key, json.dumps(REPORT))
        await until(lambda: trigger.hang_notices.note is not None)
        await asyncio.to_thread(store_text, store, key, "{}")  # the sidecar emptied it
        await until(lambda: trigger.hang_notices.note is None)
        await asyncio.to_thread(
            RunAbortMarker(run_files_of(store, RUN_PREFIX)).raise_flag,
            AbortFlag.stopped_by("alice"),
        )
        return dict((await asyncio.wait_for(watched, DEADLINE_SECONDS)).payload)

    event = asyncio.run(hang_then_advance_then_stop())
    assert event["status"] == "stopped"
    printed = capfd.readouterr().out
    looks_hung = (
        f"node {NODE} looks hung: its log and metrics did not advance for 61 s while its process "
        "was alive (hang_detection.after_seconds: 60)"
    )
    assert printed.count(looks_hung) == 1, printed
    assert f"node {NODE} advances again: no longer hung" in printed
