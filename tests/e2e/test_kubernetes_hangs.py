"""Hang detection with the Kubernetes launcher, on the tests' real control plane (and, opt-in, a
real cluster): a node whose training prints an epoch and then says nothing while it lives is stopped
as hung by its wrapper (its task's ``hang_detection``: 2 s, ``stop_when_hung``). What reaches
Airflow's side is the pod's: its training container's exit code (122) and the wrapper's exit
report, uploaded by the sidecar; the supplemental log and the run's message say so, and the
training saved its checkpoint in the grace period. Without ``stop_when_hung``, a node silent
for a while is reported in its launch task's log (read by its trigger from the hang report the
sidecar keeps in the store) and its run goes on. The cluster and the runner are those of
``test_kubernetes_run``."""

from __future__ import annotations

from typing import Any

import pytest

from hooks.runs.checkpoint_sync import read_manifest
from octotrain.exit_codes import HUNG_EXIT_STATUS
from octotrain.run_layout import RunObjects
from tests.e2e.dag_test_runner import task_logs
from tests.e2e.test_kubernetes_run import Cluster, cluster, names, reason, results_of, stored
from tests.stored_run_files import stored_json

__all__ = ["cluster"]  # the module's control plane (or real cluster), as the other scenarios use

NODE = "single-0"
SCENARIOS = ("hung", "hang-reported")


@pytest.fixture(scope="module")
def results(cluster: Cluster) -> dict[str, dict[str, Any]]:
    completed = cluster.runner("dag", *SCENARIOS)
    (cluster.root / "runner-hangs.log").write_text(completed.stdout + completed.stderr)
    found = {result["scenario"]: result for result in results_of(completed)}
    assert set(found) == {"setup", *SCENARIOS}, (completed.stdout + completed.stderr)[-6000:]
    launch_logs = task_logs(completed.stdout, "launch")
    return {name: found[name] | {"launch_logs": launch_logs[name]} for name in SCENARIOS}


@pytest.fixture
def hung(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return results["hung"]


def test_a_silent_node_is_stopped_as_hung_and_fails_the_run_saying_so(
    hung: dict[str, Any], cluster: Cluster
) -> None:
    assert hung["state"] == "failed" and hung["run"]["state"] == "failed", hung
    assert hung["tasks"]["launch[0]"] == "failed"
    first_line = reason(cluster, hung, NODE)
    assert first_line.startswith(
        f"node {NODE} was stopped as hung: its log and metrics did not advance for "
    ), first_line
    assert first_line.endswith(
        "while its process was alive (hang_detection.after_seconds: 2); it was sent SIGTERM and "
        "given the grace period to save a checkpoint"
    )
    assert hung["run"]["message"] == first_line
    # The launch task's Airflow log has the provider's word for the pod: the wrapper's status.
    assert any(f"exit_code={HUNG_EXIT_STATUS}" in log for log in hung["launch_logs"].values()), (
        hung["launch_logs"]
    )
    log = names(hung, NODE)
    assert "saved a checkpoint" in stored(cluster, hung, log.train)
    sidecar = stored(cluster, hung, log.sidecar)
    assert "the training looks hung: its process is alive" in sidecar
    assert "stopping the hung training (stop_when_hung)" in sidecar
    assert "failure class hung: not retried" in stored(cluster, hung, log.supplemental)
    objects = RunObjects(hung["task_id"], hung["run"]["run_key"])
    report = stored_json(cluster.store, objects.exit_report(NODE)) or {}
    assert report["exit_status"] == 0 and report["hung"]["hang_after_seconds"] == 2, report
    manifest = read_manifest(cluster.store, objects, NODE)
    assert manifest is not None and list(manifest.files) == ["last.pt"]


def test_a_node_silent_for_a_while_is_reported_and_its_run_goes_on(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    """Without stop_when_hung: the launch task's log (its trigger's, as the triggerer writes
    it) says once that the node looks hung and then that it advances again; the run succeeds."""
    reported = results["hang-reported"]
    assert reported["state"] == "success" and reported["run"]["state"] == "success", reported
    [launch_log] = reported["launch_logs"].values()
    looks_hung = f"node {NODE} looks hung: its log and metrics did not advance for "
    assert launch_log.count(looks_hung) == 1, launch_log
    assert "(hang_detection.after_seconds: 2)" in launch_log
    assert f"node {NODE} advances again: no longer hung" in launch_log
    sidecar = stored(cluster, reported, names(reported, NODE).sidecar)
    assert "the training looks hung: its process is alive" in sidecar
    assert "the training advanced again after " in sidecar
