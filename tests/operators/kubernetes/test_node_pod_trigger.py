"""The trigger a node's launch task defers to (``operators.kubernetes.node_pod_trigger``), against
the tests' real control plane (a node of the node agent runs the pods) with the provider's real
``KubernetesPodTrigger`` inside it: the abort flag raised by another node (or a user) deletes
the pod and ends with a "stopped" event, the node's reason and whether its user stopped it (its
task then ends skipped); a pod that ends first passes the provider's event through; a flag this
node raised itself is not its stop; Airflow killing the deferred task stops the whole run. Each
trigger is rebuilt from its serialized form through JSON, as the triggerer does from the
metadata DB."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from hooks.runs.run_abort import RunAbortMarker
from hooks.storage.object_store import default_object_store
from octotrain.abort_flags import AbortFlag
from operators.kubernetes.node_pod_trigger import NodePodTrigger
from tests.operators.conftest import (
    POD_CONN_ID,
    POD_NAMESPACE,
    start_pod,
    wait_until_running,
)
from tests.stored_run_files import run_files_of

NAMESPACE, CONN_ID = POD_NAMESPACE, POD_CONN_ID
RUN_PREFIX = "runs/7/manual__x"
NODE, OTHER = "distributed-1", "distributed-0"
# Far longer than any of these tests: a trigger that misses its event fails the test, not CI.
EVENT_DEADLINE_SECONDS = 60


@pytest.fixture
def core(pod_cluster: client.CoreV1Api) -> client.CoreV1Api:
    return pod_cluster


@pytest.fixture
def abort(core: client.CoreV1Api) -> RunAbortMarker:
    return RunAbortMarker(run_files_of(default_object_store(), RUN_PREFIX))


def watching(pod_name: str, **pod_trigger: Any) -> NodePodTrigger:
    """The trigger as the launch task defers to it, then as the triggerer rebuilds it."""
    inner = KubernetesPodTrigger(
        pod_name=pod_name, pod_namespace=NAMESPACE, trigger_start_time=datetime.now(UTC),
        base_container_name="base", kubernetes_conn_id=CONN_ID, poll_interval=0.2,
        # Whole seconds, as config/kubernetes.toml's startup_check_interval_seconds: it is the
        # timeout of the trigger's watch of the pod's events, which a real apiserver wants whole.
        startup_check_interval=1, startup_timeout=30, on_finish_action="delete_succeeded_pod",
        termination_grace_period=2, **pod_trigger,
    )  # fmt: skip
    trigger = NodePodTrigger.around(
        inner, run_prefix=RUN_PREFIX, node_index=NODE, abort_check_seconds=0.2, grace_seconds=2
    )
    classpath, kwargs = trigger.serialize()
    module, _, name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module), name)(**json.loads(json.dumps(kwargs)))
    assert isinstance(rebuilt, NodePodTrigger)
    return rebuilt


def first_event(trigger: NodePodTrigger) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        event = await asyncio.wait_for(anext(trigger.run()), EVENT_DEADLINE_SECONDS)
        return dict(event.payload)

    return asyncio.run(run())


def pod_is_going(core: client.CoreV1Api, name: str) -> bool:
    """Deleted, or being deleted (its grace period running)."""
    try:
        pod = core.read_namespaced_pod(name, NAMESPACE)
    except ApiException as error:
        return error.status == 404
    return pod.metadata.deletion_timestamp is not None


def test_another_node_s_failure_deletes_the_pod_and_stops_the_node(
    core: client.CoreV1Api, abort: RunAbortMarker
) -> None:
    start_pod(core, "trains", "import time; print('training', flush=True); time.sleep(120)")
    flag = AbortFlag.node_failed(OTHER, "failed (exit code 3)")
    abort.raise_flag(flag)
    event = first_event(watching("trains"))
    event.pop("held_since", None)  # whether the pod started first is a race here
    reason = flag.why_stopped(NODE)
    assert (
        reason == "node distributed-1 was stopped because node distributed-0 failed (exit code 3)"
    )
    assert event == {"status": "stopped", "name": "trains", "namespace": NAMESPACE,
                     "message": reason}  # fmt: skip
    assert pod_is_going(core, "trains")
    assert abort.stopped_because(NODE) == reason  # its supplemental log's first line


def test_a_user_s_stop_while_the_pod_trains_stops_it(
    core: client.CoreV1Api, abort: RunAbortMarker, capfd: pytest.CaptureFixture[str]
) -> None:
    start_pod(core, "stopped", "import time; print('training', flush=True); time.sleep(120)")

    async def stop_while_watched() -> dict[str, Any]:
        watched = asyncio.ensure_future(anext(watching("stopped").run()))
        await asyncio.to_thread(wait_until_running, core, "stopped")
        assert not watched.done()
        await asyncio.to_thread(abort.raise_flag, AbortFlag.stopped_by("alice"))
        return dict((await asyncio.wait_for(watched, EVENT_DEADLINE_SECONDS)).payload)

    event = asyncio.run(stop_while_watched())
    assert event["status"] == "stopped"
    assert event["message"] == "node distributed-1 was stopped by alice"
    # When it started on its node: the hold usage accounting bills until the stop.
    assert datetime.fromisoformat(event["held_since"]) <= datetime.now(UTC)
    with pytest.raises(ApiException) as gone:  # its grace period is over: the upload is done
        core.read_namespaced_pod("stopped", NAMESPACE)
    assert gone.value.status == 404
    # The provider's trigger was stopped before the pod went: it logged no error about it
    # (the triggerer's log of a deferred task is part of the task's log).
    printed = capfd.readouterr()
    assert "Traceback" not in printed.out + printed.err


def test_a_pod_that_ends_first_passes_the_provider_s_event_through(
    core: client.CoreV1Api, abort: RunAbortMarker
) -> None:
    start_pod(core, "succeeds", "print('trained', flush=True)")
    event = first_event(watching("succeeds", trigger_kwargs={"_redefer_count": 1}))
    assert event["status"] == "success" and event["name"] == "succeeds"
    assert event["_redefer_count"] == 1  # the provider's own event, as it made it
    assert abort.flag() is None and abort.stopped_because(NODE) is None


def test_a_flag_this_node_raised_itself_does_not_stop_it(
    core: client.CoreV1Api, abort: RunAbortMarker
) -> None:
    abort.raise_flag(AbortFlag.node_failed(NODE, "failed (exit code 3)"))
    start_pod(core, "failing", "import sys, time; time.sleep(1.5); sys.exit(3)")
    event = first_event(watching("failing"))
    assert event["status"] == "failed" and event["name"] == "failing"
    assert not pod_is_going(core, "failing")  # kept for collect_logs' diagnosis
    assert abort.stopped_because(NODE) is None


def test_airflow_killing_the_deferred_task_stops_the_whole_run(
    core: client.CoreV1Api, abort: RunAbortMarker
) -> None:
    start_pod(core, "killed", "import time; print('training', flush=True); time.sleep(120)")
    trigger = watching("killed")

    async def kill_while_watched() -> None:
        watched = asyncio.ensure_future(anext(trigger.run()))
        await asyncio.to_thread(wait_until_running, core, "killed")
        watched.cancel()  # what the triggerer does when a user marks the task failed
        with contextlib.suppress(asyncio.CancelledError):
            await watched
        await trigger.on_kill()

    asyncio.run(kill_while_watched())
    assert abort.flag() == AbortFlag.stopped_by_airflow(NODE)  # every other node stops
    assert abort.stopped_because(NODE) == (
        "node distributed-1 was stopped by Airflow (its task instance was stopped or timed out)"
    )
    assert pod_is_going(core, "killed")


def test_what_the_triggerer_stores_is_json_without_credentials(
    core: client.CoreV1Api,
) -> None:
    """The provider hands its trigger the connection's extra and the kubeconfig's content; the
    metadata DB keeps what ``serialize`` returns, so neither goes there: the triggerer resolves
    the connection from its own environment."""
    secret = "token-that-must-not-be-stored"
    trigger = NodePodTrigger.around(
        KubernetesPodTrigger(
            pod_name="p", pod_namespace=NAMESPACE, trigger_start_time=datetime.now(UTC),
            base_container_name="base", kubernetes_conn_id=CONN_ID,
            config_dict={"users": [{"name": "u", "user": {"token": secret}}]},
            connection_extras={"kube_config": f"users: [{{user: {{token: {secret}}}}}]"},
        ),
        run_prefix=RUN_PREFIX, node_index=NODE, abort_check_seconds=2, grace_seconds=30,
    )  # fmt: skip
    _, kwargs = trigger.serialize()
    stored = json.dumps(kwargs)
    assert secret not in stored
    assert "trigger_start_time" in stored and CONN_ID in stored
