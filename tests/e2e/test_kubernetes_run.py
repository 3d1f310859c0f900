"""Training tasks run with the Kubernetes launcher end to end: the real DAGs (``dag.test()``),
the real KubernetesPodOperator and kubernetes client, against the tests' real control plane
(``tests/k8s_control_plane.py``, with a node of ``tests/k8s_node_agent`` whose containers are
processes on this machine), and, opt-in (``-m k8s_real``), against a real cluster
(docs/concepts/kubernetes-launcher.md). Two-node
tasks: success, a node that fails, an OOM kill, pods that cannot be scheduled, a user's stop of
a training that ignores SIGTERM (no failure in Airflow: its launch tasks skipped without a
traceback, its run noted), a sweep's trial read and pruned where its pod keeps its files, a
command that cannot start, a node failing while the other trains,
and a worker lost mid-run whose next try reattaches to the running pod. The launch
tasks defer while their pods run (``dag.test()`` runs their triggers inline; the runner runs
them for the launch tasks it starts itself); a node failing while the other trains is also run
with synchronous launch tasks. The first line of each supplemental log says why, and the run's
message carries the one of the node that ended the run. Every call the runs made, as the
apiserver's audit log has it, must be allowed by the launcher's RBAC Role
(config/kubernetes/rbac.yaml), and every rule of the Role must have been used; an account whose
Role lacks ``pods/log`` fails a run before it creates anything."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse, urlsplit

import pytest
from kubernetes import config
from kubernetes.client import CoreV1Api, NetworkingV1Api
from kubernetes.client.exceptions import ApiException

from hooks.storage.object_store import object_store_from_url
from octotrain.contracts import NodeLogNames
from octotrain.settings import REPO_ROOT
from octotrain.storage import ObjectStore
from tests.config.rbac import (
    BASIC_USER_GRANTS,
    DISCOVERY_PATHS,
    Access,
    allows,
    apply_shipped,
    bind_role_without,
    grants,
    launcher_role,
    worker_account,
)
from tests.e2e.dag_test_runner import task_logs
from tests.e2e.k8s_runner import SECRET_TOKEN
from tests.k8s_control_plane import ControlPlane, service_account_kubeconfig
from tests.k8s_node_agent.agent import NodeAgent

NAMESPACE = "octotrain"
NO_LOGS = "launcher-without-logs"  # an account whose Role lacks pods/log
SCENARIOS = ["demo", "node-fails", "oom", "unschedulable", "stop", "start-fails", "prune"]
NODES = ("distributed-0", "distributed-1")
KUBERNETES_TOML = """\
deferrable = {deferrable}
sync_interval_seconds = 0.5
abort_check_seconds = 0.5
master_port = 29500
startup_timeout_seconds = {startup_timeout}
startup_check_interval_seconds = 1
object_store_secret = ""
node_cache_host_path = "{cache}"
launch_retries = 2
# The store is wherever the test puts it (on a real cluster, MinIO on kind's network).
[[egress]]
"""
# A real cluster (opt-in, ``-m k8s_real``): what it needs is in
# docs/concepts/kubernetes-launcher.md.
REAL_CLUSTER_ENV = ("KUBECONFIG", "OCTOTRAIN_E2E_IMAGE", "OCTOTRAIN_E2E_STORE_URL")
# The User-Agent of this module's own client (its assertions), as the apiserver logs it.
TEST_CLIENT = "octotrain-e2e-assertions"
# Where runs go: the kubeconfig, the store's settings, the startup timeout and the node agents
# of the tests' control plane (none on a real cluster).
Place = tuple[Path, dict[str, str], int, list[NodeAgent]]


@dataclass(frozen=True)
class Cluster:
    """Where the runs go (the tests' control plane, or a real cluster) and the runner's
    environment."""

    api: CoreV1Api
    env: dict[str, str]
    root: Path
    startup_timeout: int
    plane: ControlPlane | None = None  # the tests' real control plane, when runs go there
    # Its nodes, the newest last (a test that loses one adds the node that replaces it).
    agents: list[NodeAgent] = field(default_factory=list)
    # When the module's runs began: what the plane's audit log holds before is other modules'.
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def runner(
        self, *args: str, timeout: float = 600, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(REPO_ROOT / "tests" / "e2e" / "k8s_runner.py"), *args],
            env=env or self.env, capture_output=True, text=True, cwd=REPO_ROOT, timeout=timeout,
            check=False,
        )  # fmt: skip

    def env_for(self, mode: str) -> dict[str, str]:
        """The runner's environment with launch tasks that defer, or that are synchronous."""
        return self.env | {"OCTOTRAIN_KUBERNETES_CONFIG_FILE": str(self.root / f"{mode}.toml")}

    @property
    def store(self) -> ObjectStore:
        return object_store_from_url(self.env["OCTOTRAIN_OBJECT_STORE_URL"])

    def pods_of(self, task_id: int) -> list[Any]:
        selector = f"octotrain.io/task={task_id}"
        return list(self.api.list_namespaced_pod(NAMESPACE, label_selector=selector).items)

    def created_for(self, task_id: int) -> list[str]:
        """The pods ever created for the task, by their events (which outlive them)."""
        events = self.api.list_namespaced_event(NAMESPACE).items
        prefix = f"train-{task_id}-"
        return sorted(
            {
                event.involved_object.name
                for event in events
                if event.involved_object.kind == "Pod"
                and event.involved_object.name.startswith(prefix)
            }
        )

    def services(self) -> list[Any]:
        return list(self.api.list_namespaced_service(NAMESPACE).items)


def results_of(completed: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [
        json.loads(line.removeprefix("RESULT "))
        for line in completed.stdout.splitlines()
        if line.startswith("RESULT ")
    ]


STARTUP_TIMEOUT = 25


@contextmanager
def real(root: Path) -> Iterator[Place]:
    """The cluster of ``KUBECONFIG``, the Octotrain image it can run, and an S3 store that
    both this machine and the pods reach (its Airflow connection in the environment)."""
    missing = [name for name in REAL_CLUSTER_ENV if not os.environ.get(name)]
    if missing:
        needs = ", ".join(missing)
        pytest.skip(f"a real cluster needs {needs} (docs/concepts/kubernetes-launcher.md)")
    url = os.environ["OCTOTRAIN_E2E_STORE_URL"]
    conn_id = parse_qs(urlparse(url).query).get("conn_id", ["minio_default"])[0]
    connection = f"AIRFLOW_CONN_{conn_id.upper()}"
    image = os.environ["OCTOTRAIN_E2E_IMAGE"]
    store = {
        "OCTOTRAIN_OBJECT_STORE_URL": url,
        connection: os.environ[connection],
        "OCTOTRAIN_OCTOTRAIN_IMAGE": image,
        "OCTOTRAIN_E2E_ALGORITHM_IMAGE": image,
    }
    api = CoreV1Api(config.new_client_from_config(config_file=os.environ["KUBECONFIG"]))
    with contextlib.suppress(ApiException):  # it exists already
        api.create_namespace({"metadata": {"name": NAMESPACE}})
    yield Path(os.environ["KUBECONFIG"]), store, 120, []


@contextmanager
def on_control_plane(root: Path, plane: ControlPlane) -> Iterator[Place]:
    """The real control plane of the tests (``tests/k8s_control_plane.py``) with one node of
    the node agent (pods are processes here, the store a local folder): the shipped Namespace,
    Role and RoleBinding applied, the namespace enforcing Pod Security ``restricted``, and the
    launcher acting as the worker's service account that the RoleBinding names."""
    apply_shipped(plane)
    restricted = {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    with plane.client() as api:
        labelled = api.patch(f"/api/v1/namespaces/{NAMESPACE}", json=restricted,
                             headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip
        assert labelled.status_code == 200, labelled.text
        # The plane is the session's: another module's events (same task ids) are not ours.
        cleared = api.delete(f"/api/v1/namespaces/{NAMESPACE}/events")
        assert cleared.status_code == 200, cleared.text
    worker = worker_account()
    kubeconfig = service_account_kubeconfig(
        plane, root / "kubeconfig", account_namespace=worker["namespace"],
        account=worker["name"], namespace=NAMESPACE,
    )  # fmt: skip
    agents = [NodeAgent(plane, f"e2e-node-{root.name}", root=root / "cluster")]
    try:
        agents[0].start()
        store = {"OCTOTRAIN_OBJECT_STORE_URL": f"file://{root / 'state' / 'objects'}"}
        yield kubeconfig, store, STARTUP_TIMEOUT, agents
    finally:  # the namespace as shipped again, for the session's other tests
        for agent in agents:
            agent.stop()
        shipped_labels = {"metadata": {"labels": {
            "pod-security.kubernetes.io/enforce": None}}}  # fmt: skip
        with plane.client() as api:
            api.patch(f"/api/v1/namespaces/{NAMESPACE}", json=shipped_labels,
                      headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip


@pytest.fixture(
    scope="module", params=["control-plane", pytest.param("real", marks=pytest.mark.k8s_real)]
)
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """The tests' real control plane, or (``-m k8s_real``) the cluster of ``KUBECONFIG``."""
    with clustered(request, tmp_path_factory) as found:
        yield found


@contextmanager
def clustered(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """The cluster ``request.param`` names (``control-plane`` or ``real``) with
    the runner's environment and an Airflow database of its own."""
    root = tmp_path_factory.mktemp(f"e2e-kubernetes-{request.param}")
    plane: ControlPlane | None = None
    if request.param == "control-plane":
        plane = request.getfixturevalue("k8s_api")
        place = on_control_plane(root, plane)
    else:
        place = real(root)
    with place as (kubeconfig, store, startup_timeout, agents):
        # No node cache: its hostPath breaks the restricted Pod Security that the namespace
        # enforces here.
        node_cache = ""
        for mode, deferrable in (("deferrable", "true"), ("synchronous", "false")):
            (root / f"{mode}.toml").write_text(
                KUBERNETES_TOML.format(
                    cache=node_cache, startup_timeout=startup_timeout, deferrable=deferrable
                )
            )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OCTOTRAIN_"))}
        env |= store | {
            "AIRFLOW_HOME": str(root / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{root / 'airflow.db'}",
            "AIRFLOW_CONN_KUBERNETES_DEFAULT": json.dumps(
                {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
            ),
            "OCTOTRAIN_STATE_DIR": str(root / "state"),
            "OCTOTRAIN_LAUNCHER": "kubernetes",
            "OCTOTRAIN_KUBERNETES_NAMESPACE": NAMESPACE,
            "OCTOTRAIN_KUBERNETES_CONFIG_FILE": str(root / "deferrable.toml"),
            "OCTOTRAIN_STOP_GRACE_SECONDS": "3",
            "PYTHONPATH": str(REPO_ROOT),
        }
        migrate = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env,
                                 capture_output=True, text=True, check=False)  # fmt: skip
        assert migrate.returncode == 0, migrate.stderr[-3000:]
        # The assertions read what the launcher may not (Services, Events): as the admin.
        admin = plane.kubeconfig if plane else kubeconfig
        client = config.new_client_from_config(config_file=str(admin))
        client.user_agent = TEST_CLIENT
        try:
            yield Cluster(api=CoreV1Api(client), env=env, root=root,
                          startup_timeout=startup_timeout, plane=plane,
                          agents=agents)  # fmt: skip
        finally:
            client.close()


@pytest.fixture(scope="module")
def results(cluster: Cluster) -> dict[str, dict[str, Any]]:
    completed = cluster.runner("dag", *SCENARIOS)
    (cluster.root / "runner.log").write_text(completed.stdout + completed.stderr)
    found = {result["scenario"]: result for result in results_of(completed)}
    assert set(found) == {"setup", *SCENARIOS}, (completed.stdout + completed.stderr)[-6000:]
    launch_logs = task_logs(completed.stdout, "launch")
    return {name: result | {"launch_logs": launch_logs[name]} for name, result in found.items()}


def stored(cluster: Cluster, result: dict[str, Any], name: str) -> str:
    key = f"runs/{result['task_id']}/{result['run']['run_key']}/logs/{name}"
    path = cluster.root / "fetched" / key
    cluster.store.get_file(key, path)
    return path.read_text()


def names(result: dict[str, Any], node: str) -> NodeLogNames:
    return NodeLogNames(task_id=result["task_id"], node_index=node)


def reason(cluster: Cluster, result: dict[str, Any], node: str) -> str:
    """The first line of the node's supplemental log: why it did not end normally."""
    return stored(cluster, result, names(result, node).supplemental).splitlines()[0]


def test_a_two_node_run_succeeds_with_its_logs_metrics_and_model(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    demo = results["demo"]
    assert demo["state"] == "success", demo
    assert set(demo["tasks"].values()) == {"success"}
    assert {"launch[0]", "launch[1]", "delete_service"} <= set(demo["tasks"])
    assert demo["run"]["state"] == "success" and demo["run"]["model_version"] == 1
    assert demo["run"]["lineage_inputs"] == ["dataset"]
    for node in NODES:
        log = names(demo, node)
        assert "final mse" in stored(cluster, demo, log.train)
        assert "staged house-prices_v1: " in stored(cluster, demo, log.init)
        # the algorithm's uploaded code, staged as CODE: the pod ran `python train.py` there
        assert "staged linear-regression-numpy v1: " in stored(cluster, demo, log.init)
        assert "training ended (exit status 0)" in stored(cluster, demo, log.sidecar)
        prefix = f"runs/{demo['task_id']}/{demo['run']['run_key']}"
        assert cluster.store.list(f"{prefix}/metrics/{node}"), node
        assert cluster.store.list(f"{prefix}/resources"), node
        assert not cluster.store.list(f"{prefix}/logs/{log.supplemental}")
    model = demo["run"]["model_prefix"]
    assert [i.key.removeprefix(model + "/") for i in cluster.store.list(model)] == [
        "model.json", "rank-0/weights.npz", "rank-1/weights.npz"
    ]  # fmt: skip
    assert len(cluster.created_for(demo["task_id"])) == 2  # one pod per node, no duplicate
    assert cluster.pods_of(demo["task_id"]) == []  # deleted once their logs were safe
    assert cluster.services() == []  # the teardown deleted the Service
    networking = NetworkingV1Api(cluster.api.api_client)  # ... and the NetworkPolicy
    assert networking.list_namespaced_network_policy(NAMESPACE).items == []


def started_nodes(cluster: Cluster, result: dict[str, Any]) -> list[str]:
    """The nodes whose pod was created (``dag.test()`` runs mapped task instances one at a
    time, in an order of its own; a node whose turn comes after the run was aborted does not
    start)."""
    return sorted(name.split("-")[2] + "-" + name.split("-")[3]
                  for name in cluster.created_for(result["task_id"]))  # fmt: skip


def test_a_failing_node_fails_the_run_and_its_supplemental_log_says_why(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    failed = results["node-fails"]
    assert failed["state"] == "failed"
    assert failed["tasks"]["launch[0]"] == "failed"
    assert failed["tasks"]["collect_logs"] == "success"
    assert failed["tasks"]["archive_model"] == "upstream_failed"
    assert failed["tasks"]["delete_service"] == "success"
    assert failed["run"]["state"] == "failed" and failed["run"]["model_version"] is None
    culprit = reason(cluster, failed, "distributed-0")
    assert culprit == (
        "node distributed-0 failed with exit code 3: the training program exited with an error"
    )
    assert failed["run"]["message"].startswith(culprit)
    train_log = stored(cluster, failed, names(failed, NODES[0]).train)
    assert "node distributed-0 starting" in train_log
    assert "secret token given" in train_log  # from the run's Secret, by reference
    if cluster.plane is not None:  # the pods the launcher created, as the audit log has them
        specs = json.dumps(cluster.plane.created_pods())
        assert SECRET_TOKEN not in specs and "secretKeyRef" in specs
    assert cluster.api.list_namespaced_secret(NAMESPACE).items == []  # the teardown deleted it
    if "distributed-1" in started_nodes(cluster, failed):  # its turn came first: it succeeded
        assert failed["tasks"]["launch[1]"] == "success"
        assert not cluster.store.list(
            f"runs/{failed['task_id']}/{failed['run']['run_key']}/logs/"
            + names(failed, "distributed-1").supplemental
        )
    else:
        assert failed["tasks"]["launch[1]"] == "failed"
        other = reason(cluster, failed, "distributed-1")
        assert other.startswith(
            "node distributed-1 was not started because node distributed-0 failed"
        )
    for node in NODES:
        for name in names(failed, node).always():
            stored(cluster, failed, name)  # every log file exists, if empty
    assert cluster.pods_of(failed["task_id"]) == []  # collect_logs deleted the kept pod


def test_an_oom_kill_names_the_memory_limit(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    oom = results["oom"]
    assert oom["state"] == "failed" and oom["run"]["state"] == "failed"
    [first] = started_nodes(cluster, oom)
    first_line = reason(cluster, oom, first)
    assert first_line.startswith(
        f"node {first} ran out of memory: it used more than its memory limit of 1024 MiB and was "
        "killed (OOMKilled, exit code 137)"
    )
    assert oom["run"]["message"].startswith(first_line)
    assert "allocating" in stored(cluster, oom, names(oom, first).train)
    assert cluster.pods_of(oom["task_id"]) == []


def test_pods_that_cannot_be_scheduled_quote_the_scheduler(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    pending = results["unschedulable"]
    assert pending["state"] == "failed" and pending["run"]["state"] == "failed"
    [first] = started_nodes(cluster, pending)
    first_line = reason(cluster, pending, first)
    assert first_line.startswith(
        f"node {first} did not start within {cluster.startup_timeout}s: the pod could not be "
        "scheduled (Unschedulable): 0/1 nodes are available: "
    )
    assert "Insufficient nvidia.com/gpu" in first_line
    [other] = [node for node in NODES if node != first]
    assert reason(cluster, pending, other).startswith(f"node {other} was not started because")
    assert cluster.pods_of(pending["task_id"]) == []


def test_a_stopped_run_deletes_its_pods_keeps_its_logs_and_ends_stopped(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    stopped = results["stop"]
    assert stopped["run"]["state"] == "stopped", stopped
    # Airflow 3 has no stopped state, and a stop must not show as a green success: the nodes'
    # tasks fail saying who stopped them (not retried); the logs are collected; nothing is
    # archived; the DAG run is failed, its note saying who stopped it.
    assert stopped["state"] == "failed", stopped
    tasks = stopped["tasks"]
    assert tasks["launch[0]"] == tasks["launch[1]"] == "failed"
    assert (tasks["collect_logs"], tasks["archive_model"]) == ("success", "upstream_failed")
    assert tasks["delete_service"] == "success"
    for launch_log in stopped["launch_logs"].values():
        assert "stopped by alice" in launch_log
    assert stopped["note"].startswith("**Stopped by alice** at "), stopped["note"]
    [trained] = started_nodes(cluster, stopped)  # the other one's turn came after the stop
    [other] = [node for node in NODES if node != trained]
    # It ignores SIGTERM: its wrapper kills it after two thirds of the pod's grace period (3 s)
    # and says so, leaving the sidecar the rest for its final upload.
    killed = (
        f"node {trained} was stopped by alice; it ignored SIGTERM and was killed after the "
        "grace period of 2 s"
    )
    assert reason(cluster, stopped, trained) == killed
    assert (
        reason(cluster, stopped, other)
        == f"node {other} was not started: the run was stopped by alice"
    )
    # The run's message is the stop in a line: who, when, how far (the node that never started
    # reported no progress).
    assert stopped["run"]["message"].startswith("Stopped by alice at "), stopped["run"]
    assert "epoch 0" in stored(cluster, stopped, names(stopped, trained).train)
    sidecar = stored(cluster, stopped, names(stopped, trained).sidecar)
    assert "training ended (exit status 137)" in sidecar
    assert "uploaded OUTPUT" in sidecar  # the sidecar's final upload, before its pod went
    assert cluster.pods_of(stopped["task_id"]) == []


def test_a_sweep_s_trial_is_read_and_pruned_where_the_pods_keep_its_files(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    """A sweep's driver reads a trial's objective from the store, where the pod's sidecar syncs
    its charts as it trains, and prunes it through the run's abort flag: the pod stops and the
    run ends ``pruned`` (the driver's loop itself is the same on every launcher)."""
    pruned = results["prune"]
    seen = pruned["objective_seen"]
    assert len(seen) >= 3 and seen[:3] == [[1.0, 10.0], [2.0, 5.0], [3.0, 10.0 / 3]], seen
    assert pruned["run"]["state"] == "pruned", pruned
    assert pruned["run"]["message"].startswith(
        f"Pruned by sweep k8s-sweep (trial 0, at step {int(seen[-1][0])})"
    ), pruned["run"]
    assert pruned["tasks"]["launch[0]"] == "failed" and pruned["state"] == "failed"
    assert "pruned by sweep k8s-sweep" in pruned["launch_logs"][0]
    assert reason(cluster, pruned, "single-0").startswith(
        "node single-0 was pruned by sweep k8s-sweep"
    )
    assert cluster.pods_of(pruned["task_id"]) == []


def test_a_command_that_cannot_start_says_why(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    refused = results["start-fails"]
    assert refused["state"] == "failed" and refused["run"]["state"] == "failed"
    [first] = started_nodes(cluster, refused)
    first_line = reason(cluster, refused, first)
    assert first_line == (
        f"node {first} failed to start because its command '/nonexistent/python3' could not be "
        "run (No such file or directory)"
    )
    assert refused["run"]["message"].startswith(first_line)
    assert "cannot start /nonexistent/python3" in stored(
        cluster, refused, names(refused, first).train
    )
    assert cluster.pods_of(refused["task_id"]) == []


def launch_in_background(
    cluster: Cluster, plan: Path, node: str, try_number: int, env: dict[str, str]
) -> Any:
    command = [sys.executable, str(REPO_ROOT / "tests" / "e2e" / "k8s_runner.py"), "launch",
               str(plan), node, str(try_number)]  # fmt: skip
    return subprocess.Popen(
        command, env=env, cwd=REPO_ROOT, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "task"),
    [("deferrable", "concurrent-failure"), ("synchronous", "concurrent-failure-sync")],
)
def test_a_node_failing_while_the_other_trains_stops_it(
    results: dict[str, dict[str, Any]], cluster: Cluster, mode: str, task: str
) -> None:
    """Both nodes' launch tasks at once, as Airflow's executors run them: deferred, the other
    node's trigger sees the abort flag; synchronous, its task's watcher thread does."""
    task_id = results["setup"]["tasks"][task]
    plan = cluster.root / f"{task}-plan.json"
    env = cluster.env_for(mode)
    prepared = cluster.runner("prepare", task, str(plan), env=env)
    assert prepared.returncode == 0, prepared.stderr[-4000:]
    workers = {node: launch_in_background(cluster, plan, node, 1, env) for node in NODES}
    outputs = {node: worker.communicate(timeout=120)[0] for node, worker in workers.items()}
    assert all(worker.returncode != 0 for worker in workers.values()), outputs
    stopping = "deleting the pod: node distributed-1 was stopped because node distributed-0 failed"
    assert stopping in outputs["distributed-1"]
    collected = cluster.runner("collect", str(plan), env=env)
    assert results_of(collected) == [{"failed_nodes": list(NODES)}], collected.stderr[-4000:]
    run_key = json.loads(plan.read_text())["run_key"]
    result = {"task_id": task_id, "run": {"run_key": run_key}}
    culprit = reason(cluster, result, "distributed-0")
    assert culprit.startswith("node distributed-0 failed with exit code 3")
    other = stored(cluster, result, names(result, "distributed-1").supplemental)
    assert other.startswith("node distributed-1 was stopped because node distributed-0 failed")
    assert "exit code 143: terminated by SIGTERM" in other  # stopped within its grace period
    assert "starting" in stored(cluster, result, names(result, "distributed-1").train)
    assert cluster.pods_of(task_id) == []


def test_a_lost_worker_s_next_try_reattaches_to_the_running_pod(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    task_id = results["setup"]["tasks"]["reattach"]
    plan = cluster.root / "reattach-plan.json"
    prepared = cluster.runner("prepare", "reattach", str(plan))
    assert prepared.returncode == 0, prepared.stderr[-4000:]
    command = [sys.executable, str(REPO_ROOT / "tests" / "e2e" / "k8s_runner.py"), "launch",
               str(plan), "distributed-0", "1"]  # fmt: skip
    worker = subprocess.Popen(command, env=cluster.env, cwd=REPO_ROOT, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not any(_training(pod) for pod in cluster.pods_of(task_id)):
            assert time.monotonic() < deadline and worker.poll() is None, "node 0 never trained"
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)  # the worker is lost mid-run
        worker.wait()
    retried = cluster.runner("launch", str(plan), "distributed-0", "2")
    assert retried.returncode == 0, (retried.stdout + retried.stderr)[-4000:]
    assert "reattaching to pod train-" in retried.stdout + retried.stderr
    assert "training finished" in retried.stdout + retried.stderr  # its log, followed
    assert cluster.runner("launch", str(plan), "distributed-1", "1").returncode == 0
    collected = cluster.runner("collect", str(plan))
    assert results_of(collected) == [{"failed_nodes": []}], collected.stderr[-4000:]
    assert len(cluster.created_for(task_id)) == 2  # the retry created no second pod
    run_key = json.loads(plan.read_text())["run_key"]
    train = cluster.root / "fetched" / "reattach-train.log"
    log = NodeLogNames(task_id=task_id, node_index="distributed-0").train
    cluster.store.get_file(f"runs/{task_id}/{run_key}/logs/{log}", train)
    epochs = [line for line in train.read_text().splitlines() if line.startswith("epoch ")]
    assert len(epochs) == 30  # nothing lost while no worker watched
    assert cluster.store.list(f"runs/{task_id}/{run_key}/output/distributed-0")


def test_four_nodes_meet_over_the_run_s_headless_service(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    """Four nodes' launch tasks at once, as Airflow's executors run them: rank 0 listens on its
    own name under the run's headless Service (``MASTER_ADDR``), the other three connect to it
    (a rendezvous as torchrun's), and all four succeed."""
    task_id = results["setup"]["tasks"]["four-nodes"]
    plan = cluster.root / "four-nodes-plan.json"
    prepared = cluster.runner("prepare", "four-nodes", str(plan))
    assert prepared.returncode == 0, prepared.stderr[-4000:]
    nodes = json.loads(plan.read_text())["node_indices"]
    assert len(nodes) == 4
    workers = {node: launch_in_background(cluster, plan, node, 1, cluster.env) for node in nodes}
    outputs = {node: worker.communicate(timeout=180)[0] for node, worker in workers.items()}
    assert all(worker.returncode == 0 for worker in workers.values()), outputs
    collected = cluster.runner("collect", str(plan))
    assert results_of(collected) == [{"failed_nodes": []}], collected.stderr[-4000:]
    document = json.loads(plan.read_text())
    # Node 0's name under the run's Service (the node agent resolves it as kube-dns would).
    assert document["master_addr"].startswith("distributed-0.")
    assert document["master_addr"].endswith(f".{NAMESPACE}.svc.cluster.local")
    result = {"task_id": task_id, "run": {"run_key": document["run_key"]}}
    for rank, node in enumerate(nodes):
        train = stored(cluster, result, names(result, node).train)
        assert f"rank {rank} met all 4" in train, train
    assert len(cluster.created_for(task_id)) == 4
    assert cluster.pods_of(task_id) == [] and cluster.services() == []


def _training(pod: Any) -> bool:
    statuses = pod.status.container_statuses or []
    return any(s.name == "base" and s.state.running is not None for s in statuses)


def test_every_call_of_the_runs_is_allowed_by_the_launcher_s_rbac_role_and_needed(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    """Every request the runs above made (their workers' calls, not this module's own) against
    the Role a production install applies: a real API server would refuse any call it does not
    allow, and a rule no run used grants more than the launcher needs."""
    role = launcher_role()
    if cluster.plane is not None:  # the apiserver's audit log of the launcher's account
        accesses, paths = _audited_accesses(cluster.plane, since=cluster.started_at)
    else:
        pytest.skip("a real cluster's requests are not recorded here")
    assert paths <= DISCOVERY_PATHS  # what every authenticated client may read
    # ... and ask about itself (the launcher's access check before a run creates anything)
    accesses = {
        access
        for access in accesses
        if access is None
        or (access.api_group, access.resource, access.verb) not in BASIC_USER_GRANTS
    }
    refused = sorted(str(access) for access in accesses if access and not allows(role, access))
    assert not refused, f"config/kubernetes/rbac.yaml does not allow: {refused}"
    used = {(access.api_group, access.resource, access.verb) for access in accesses if access}
    assert grants(role) == used, f"granted but never used: {sorted(grants(role) - used)}"


def test_a_role_without_pods_log_fails_the_run_before_it_creates_anything(
    results: dict[str, dict[str, Any]], cluster: Cluster
) -> None:
    """The launcher's account bound to the shipped Role less its ``pods/log`` rule: the run's
    ``stage_data`` refuses it, naming the account and the permission, and the run has put
    nothing in the cluster or the store."""
    if cluster.plane is None:
        pytest.skip("needs the tests' control plane, where accounts and Roles can be made")
    bind_role_without(cluster.plane, NO_LOGS, "pods/log")
    kubeconfig = service_account_kubeconfig(
        cluster.plane, cluster.root / "no-logs.kubeconfig", account_namespace=NAMESPACE,
        account=NO_LOGS, namespace=NAMESPACE,
    )  # fmt: skip
    connection = {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
    env = cluster.env | {"AIRFLOW_CONN_KUBERNETES_DEFAULT": json.dumps(connection)}
    plan = cluster.root / "no-logs-plan.json"
    refused = cluster.runner("prepare", "demo-on-k8s", str(plan), env=env)
    assert refused.returncode != 0
    assert (
        f'the launcher\'s Kubernetes user "system:serviceaccount:{NAMESPACE}:{NO_LOGS}" '
        "(connection 'kubernetes_default') may not get pods/log in the namespace octotrain; "
        "grant it the Role of config/kubernetes/rbac.yaml"
    ) in refused.stderr, refused.stderr[-3000:]
    run = json.loads(plan.read_text())
    assert not cluster.store.list(f"runs/{run['task_id']}/{run['run_key']}/")
    assert cluster.services() == []
    assert cluster.api.list_namespaced_secret(NAMESPACE).items == []
    networking = NetworkingV1Api(cluster.api.api_client)
    assert networking.list_namespaced_network_policy(NAMESPACE).items == []


def _audited_accesses(plane: ControlPlane, *, since: datetime) -> tuple[set[Access], set[str]]:
    """What the launcher's service account asked the real apiserver for since ``since`` (its
    resource requests as the authorizer saw them, and its other paths), with any it refused
    (403) failing. Not the session's other modules': a restarted apiserver refuses requests
    until its RBAC caches are filled again, which the restarts module's runs ride out."""
    worker = worker_account()
    account = f"system:serviceaccount:{worker['namespace']}:{worker['name']}"
    events = plane.audited(account, since=since)
    assert events, "the runs made no request"
    forbidden = [f"{e['verb']} {e['requestURI']}" for e in events
                 if e.get("responseStatus", {}).get("code") == 403]  # fmt: skip
    assert not forbidden, f"the apiserver refused the launcher: {forbidden}"
    accesses, paths = set(), set()
    for event in events:
        target = event.get("objectRef")
        if target is None:
            paths.add(urlsplit(event["requestURI"]).path)
            continue
        resource = target["resource"] + (f"/{target['subresource']}" if target.get(
            "subresource") else "")  # fmt: skip
        accesses.add(Access(verb=event["verb"], resource=resource,
                            namespace=target.get("namespace"),
                            api_group=target.get("apiGroup", "")))  # fmt: skip
    return accesses, paths
