"""A node's launch task and the triggerer (``operators.kubernetes.launch_pod``): it defers unless
``config/kubernetes.toml`` says otherwise, and when it resumes from its trigger, a node the
abort flag stopped ends with its reason, never retried: skipped when its user stopped the run,
failed when another node's failure did; and a pod that did not start in time fails its node at
once, raising the run's abort flag, without following the pod's log (which, for a pod that
started just after its startup timeout, would hold a worker for the whole training). The same
stops end a synchronous task the same way, and a node not started before the flag went up."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException
from kubernetes import client
from sqlalchemy.orm import Session

from hooks.runs.run_abort import RunAbortMarker
from hooks.storage.object_store import default_object_store
from octotrain.abort_flags import AbortFlag
from octotrain.settings import get_settings
from operators.kubernetes.launch_pod import LaunchNodePodOperator
from tests.operators.conftest import (
    POD_CONN_ID,
    POD_NAMESPACE,
    start_pod,
    wait_until_running,
)
from tests.operators.kubernetes.test_launch_pod import CPU_TASK, _TaskInstance, plan_of
from tests.stored_run_files import run_files_of

# What following the late pod's log would take (its training's length), well above what failing
# at once takes.
TRAINING_SECONDS = 60


def node(**kwargs: Any) -> LaunchNodePodOperator:
    return LaunchNodePodOperator(
        task_id="launch", training_task_id=1, node_index="single-0", **kwargs
    )


def test_launch_tasks_defer_to_the_triggerer_unless_the_config_says_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert node().deferrable
    synchronous = tmp_path / "kubernetes.toml"
    synchronous.write_text("deferrable = false\n")
    monkeypatch.setenv("OCTOTRAIN_KUBERNETES_CONFIG_FILE", str(synchronous))
    get_settings.cache_clear()
    try:
        assert not node().deferrable
    finally:
        get_settings.cache_clear()


def test_a_node_its_user_stopped_resumes_failed_with_who_stopped_it_and_is_not_retried() -> None:
    """Failed, not skipped: Airflow 3 has no stopped state, and a stop must not show as a
    green success in its grid."""
    event = {"status": "stopped", "name": "train-1-single-0", "namespace": "octotrain",
             "message": "node single-0 was stopped by alice"}  # fmt: skip
    with pytest.raises(AirflowFailException, match=r"^node single-0 was stopped by alice$"):
        node().trigger_reentry({}, event)  # type: ignore[arg-type]


def test_a_node_another_s_failure_stopped_resumes_failed_and_is_not_retried() -> None:
    message = "node single-0 was stopped because node distributed-1 failed (exit code 3)"
    event = {"status": "stopped", "name": "train-1-single-0", "namespace": "octotrain",
             "message": message}  # fmt: skip
    with pytest.raises(AirflowFailException, match=rf"^{re.escape(message)}$"):
        node().trigger_reentry({}, event)  # type: ignore[arg-type]


@pytest.fixture
def store_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A local folder as the settings' object store: where the run's abort flag is."""
    monkeypatch.setenv("OCTOTRAIN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OCTOTRAIN_OBJECT_STORE_URL", f"file://{tmp_path / 'objects'}")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.mark.parametrize(
    ("flag", "ends", "reason"),
    [
        (AbortFlag.stopped_by("alice"), AirflowFailException,
         "node single-0 was not started: the run was stopped by alice"),
        (AbortFlag.stopped_by_airflow("distributed-1"), AirflowFailException,
         "node single-0 was not started because node distributed-1 was stopped by Airflow "
         "(its task instance was stopped or timed out)"),
    ],
)  # fmt: skip
def test_a_node_not_started_before_the_flag_went_up_fails_saying_why(
    rule_session: Session,
    store_settings: None,
    flag: AbortFlag,
    ends: type[AirflowException],
    reason: str,
) -> None:
    plan = plan_of(rule_session, CPU_TASK, 1)
    abort = RunAbortMarker(run_files_of(default_object_store(), plan.objects.prefix))
    abort.raise_flag(flag)
    context = {"ti": _TaskInstance(plan, 0), "run_id": plan.run_id, "dag": object()}
    with pytest.raises(ends, match=rf"^{re.escape(reason)}$"):
        node().execute(context)  # type: ignore[arg-type]
    assert abort.stopped_because("single-0") == reason  # its supplemental log's first line


@pytest.mark.parametrize(
    ("flag", "ends", "reason"),
    [
        (AbortFlag.stopped_by("alice"), AirflowFailException,
         "node single-0 was stopped by alice"),
        (AbortFlag.node_failed("distributed-1", "failed (exit code 3)"), AirflowFailException,
         "node single-0: stopped: node distributed-1 failed (exit code 3)"),
    ],
)  # fmt: skip
def test_a_synchronous_node_whose_pod_the_flag_took_down_fails_saying_why(
    store_settings: None, flag: AbortFlag, ends: type[AirflowException], reason: str
) -> None:
    """What the provider raises once the watcher deleted the pod (it ended failed) becomes
    the node's end, failed and not retried, saying who or what stopped it."""
    abort = RunAbortMarker(run_files_of(default_object_store(), "runs/1/r-1"))
    abort.raise_flag(flag)
    ended = pytest.raises(ends, match=rf"^{re.escape(reason)}$")
    with ended, node(deferrable=False)._failure_raises_the_flag(abort):
        raise AirflowException("Pod train-1-single-0 returned a failure.")


def test_a_pod_past_its_startup_timeout_fails_its_node_without_following_it(
    pod_cluster: client.CoreV1Api, rule_session: Session
) -> None:
    plan = plan_of(rule_session, CPU_TASK, 1)
    start_pod(pod_cluster, "late", f"import time; time.sleep({TRAINING_SECONDS})")
    wait_until_running(pod_cluster, "late")  # it started, after its startup timeout
    context = {"ti": _TaskInstance(plan, 0), "run_id": plan.run_id, "dag": object()}
    event = {"status": "timeout", "name": "late", "namespace": POD_NAMESPACE,
             "message": "Pod took too long to start. More than 10s."}  # fmt: skip
    operator = node(kubernetes_conn_id=POD_CONN_ID, namespace=POD_NAMESPACE)
    started = time.monotonic()
    with pytest.raises(AirflowFailException, match=r"^node single-0: "):
        operator.trigger_reentry(context, event)  # type: ignore[arg-type]
    assert time.monotonic() - started < TRAINING_SECONDS / 2
    abort = RunAbortMarker(run_files_of(default_object_store(), plan.objects.prefix))
    flag = abort.flag()
    assert flag is not None and flag.node == "single-0" and not flag.stopped
    assert flag == AbortFlag.node_failed("single-0", flag.reason)
