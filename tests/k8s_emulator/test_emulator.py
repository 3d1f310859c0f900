"""The emulator against the real kubernetes client and the real KubernetesPodOperator: what
other tests rely on when they use it in place of a cluster."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from tests.k8s_emulator import KubernetesEmulator
from tests.k8s_emulator.pod_security import RESTRICTED_CONTAINER_CONTEXT, RESTRICTED_POD_CONTEXT

NAMESPACE = "default"


@pytest.fixture
def core(k8s_emulator: KubernetesEmulator, tmp_path: Path) -> Iterator[client.CoreV1Api]:
    """The kubernetes client, configured from the emulator's kubeconfig."""
    kubeconfig = k8s_emulator.write_kubeconfig(tmp_path / "kubeconfig")
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.CoreV1Api(api_client)
    api_client.close()


def wait_for(condition: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll until ``condition()`` is truthy; its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {condition}")


def python_pod(name: str, code: str, **spec: Any) -> dict[str, Any]:
    """A one-container pod whose ``base`` container runs ``python -c code`` (meeting the
    ``restricted`` Pod Security profile, which the emulator enforces)."""
    container = {"name": "base", "image": "python:3.11", "command": ["python", "-c", code],
                 "securityContext": RESTRICTED_CONTAINER_CONTEXT}  # fmt: skip
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **spec.pop("metadata", {})},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": RESTRICTED_POD_CONTEXT,
            "containers": [container],
            **spec,
        },
    }


def log(core: client.CoreV1Api, name: str, **params: Any) -> str:
    """A pod's log as text. (With its content preloaded, kubernetes client 36 returns the
    ``repr`` of the bytes for any server, so the raw response is read instead.)"""
    response = core.read_namespaced_pod_log(name, NAMESPACE, _preload_content=False, **params)
    return response.data.decode()


def running_log(core: client.CoreV1Api, name: str) -> str:
    """The log of a running pod once it has written something; "" until then."""
    return log(core, name) if phase(core, name) == "Running" else ""


def phase(core: client.CoreV1Api, name: str) -> str:
    return core.read_namespaced_pod(name, NAMESPACE).status.phase


def finished(core: client.CoreV1Api, name: str) -> client.V1Pod:
    """The pod once it is Succeeded or Failed."""
    return wait_for(
        lambda: (
            (pod := core.read_namespaced_pod(name, NAMESPACE)).status.phase
            in ("Succeeded", "Failed")
            and pod
        )
    )


def reasons(core: client.CoreV1Api, name: str) -> list[str]:
    events = core.list_namespaced_event(NAMESPACE, field_selector=f"involvedObject.name={name}")
    return [event.reason for event in events.items]


def test_pod_runs_succeeds_and_its_logs_are_readable(core: client.CoreV1Api) -> None:
    code = "import sys; print('one'); print('two', file=sys.stderr); print('three')"
    created = core.create_namespaced_pod(NAMESPACE, python_pod("hello", code))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.spec.termination_grace_period_seconds == 30  # defaulted

    pod = finished(core, "hello")
    assert pod.status.phase == "Succeeded"
    status = pod.status.container_statuses[0]
    assert (status.name, status.image, status.restart_count) == ("base", "python:3.11", 0)
    terminated = status.state.terminated
    assert (terminated.exit_code, terminated.reason) == (0, "Completed")
    assert terminated.started_at <= terminated.finished_at
    assert {c.type: c.status for c in pod.status.conditions}["PodScheduled"] == "True"
    assert reasons(core, "hello") == ["Scheduled", "Pulled", "Created", "Started"]

    logs = log(core, "hello", container="base")
    assert sorted(logs.splitlines()) == ["one", "three", "two"]
    assert log(core, "hello", tail_lines=1) in ("three\n", "two\n")
    stamped = log(core, "hello", timestamps=True).splitlines()
    stamp, _, text = stamped[0].partition(" ")
    assert stamp.endswith("Z") and "T" in stamp and text in ("one", "two")
    assert log(core, "hello", since_seconds=60).count("\n") == 3


def test_follow_streams_lines_as_they_are_written(core: client.CoreV1Api) -> None:
    code = "import time\nfor i in range(3):\n    print('tick', i, flush=True); time.sleep(0.3)"
    core.create_namespaced_pod(NAMESPACE, python_pod("ticker", code))
    wait_for(lambda: phase(core, "ticker") != "Pending")

    response = core.read_namespaced_pod_log(
        "ticker", NAMESPACE, follow=True, timestamps=True, _preload_content=False
    )
    arrivals = []
    for chunk in response.stream(amt=None, decode_content=True):
        arrivals.extend((time.monotonic(), line) for line in chunk.decode().splitlines())
    assert [line.split(" ", 1)[1] for _, line in arrivals] == ["tick 0", "tick 1", "tick 2"]
    assert arrivals[-1][0] - arrivals[0][0] > 0.4  # streamed, not all at the end
    assert phase(core, "ticker") == "Succeeded"  # the stream ends with the container


def test_failing_container_fails_the_pod_with_its_exit_code(core: client.CoreV1Api) -> None:
    code = "import sys; print('bad input'); sys.exit(3)"
    pod = python_pod(
        "failing", code, container={"terminationMessagePolicy": "FallbackToLogsOnError"}
    )
    core.create_namespaced_pod(NAMESPACE, pod)
    pod = finished(core, "failing")
    assert pod.status.phase == "Failed"
    terminated = pod.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (3, "Error")
    assert terminated.message == "bad input\n"


def test_memory_limit_is_enforced_as_oom_kill(core: client.CoreV1Api) -> None:
    code = "import time; hog = b'x' * (300 * 2**20); time.sleep(30)"
    limits = {"memory": "64Mi", "cpu": "1"}
    pod = python_pod("hog", code, container={"resources": {"limits": limits}})
    core.create_namespaced_pod(NAMESPACE, pod)
    pod = finished(core, "hog")
    assert pod.status.phase == "Failed"
    assert pod.status.qos_class == "Guaranteed"
    terminated = pod.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (137, "OOMKilled")
    assert "OOMKilled" in reasons(core, "hog")


def test_pod_that_does_not_fit_stays_pending(
    core: client.CoreV1Api, k8s_emulator: KubernetesEmulator
) -> None:
    gpu = python_pod("gpu", "pass", container={"resources": {"limits": {"nvidia.com/gpu": "1"}}})
    big = python_pod(
        "big", "pass", container={"resources": {"requests": {"cpu": "32", "memory": "128Gi"}}}
    )
    core.create_namespaced_pod(NAMESPACE, gpu)
    core.create_namespaced_pod(NAMESPACE, big)
    time.sleep(0.3)
    pod = core.read_namespaced_pod("gpu", NAMESPACE)
    assert pod.status.phase == "Pending" and pod.spec.node_name is None
    condition = pod.status.conditions[0]
    assert (condition.type, condition.status, condition.reason) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    assert condition.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    events = {e["involvedObject"]["name"]: e for e in k8s_emulator.events(NAMESPACE)}
    assert events["gpu"]["reason"] == "FailedScheduling" and events["gpu"]["type"] == "Warning"
    assert events["gpu"]["message"] == condition.message
    assert (
        events["big"]["message"]
        == "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
    )


def test_gpus_are_handed_out_and_waiting_pods_get_them_when_freed(tmp_path: Path) -> None:
    with KubernetesEmulator(root=tmp_path / "gpu-node", gpus=1) as emulator:
        api_client = config.new_client_from_config(
            config_file=str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
        )
        core = client.CoreV1Api(api_client)
        code = "import os, time; print(os.environ['CUDA_VISIBLE_DEVICES']); time.sleep(0.5)"
        gpu = {"resources": {"limits": {"nvidia.com/gpu": "1"}}}
        core.create_namespaced_pod(NAMESPACE, python_pod("first", code, container=gpu))
        core.create_namespaced_pod(NAMESPACE, python_pod("second", code, container=gpu))
        wait_for(lambda: phase(core, "first") == "Running")
        second = core.read_namespaced_pod("second", NAMESPACE).status
        assert second.phase == "Pending" and second.conditions[0].reason == "Unschedulable"
        assert finished(core, "second").status.phase == "Succeeded"
        assert log(core, "second") == "0\n"
        api_client.close()


def test_missing_image_fails_to_pull(core: client.CoreV1Api) -> None:
    image = "registry.example.com/team/does-not-exist:1.0"
    core.create_namespaced_pod(NAMESPACE, python_pod("nopull", "pass", container={"image": image}))

    def waiting_reason() -> str:
        statuses = core.read_namespaced_pod("nopull", NAMESPACE).status.container_statuses
        return statuses[0].state.waiting.reason if statuses and statuses[0].state.waiting else ""

    wait_for(lambda: waiting_reason() == "ImagePullBackOff")
    assert phase(core, "nopull") == "Pending"
    events = core.list_namespaced_event(NAMESPACE, field_selector="involvedObject.name=nopull")
    messages = [e.message for e in events.items if e.reason == "Failed"]
    assert messages[0].startswith(f'Failed to pull image "{image}": ')
    backoff = next(e.message for e in events.items if e.reason == "BackOff")
    assert backoff == f'Back-off pulling image "{image}"'
    with pytest.raises(ApiException) as error:
        log(core, "nopull")
    assert error.value.status == 400


def test_delete_sends_sigterm_and_removes_the_pod(
    core: client.CoreV1Api, k8s_emulator: KubernetesEmulator, tmp_path: Path
) -> None:
    code = (
        "import pathlib, signal, sys, time\n"
        "def stop(*_):\n"
        "    pathlib.Path('/out/terminated').write_text('SIGTERM')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    host = tmp_path / "host"
    pod = python_pod(
        "sleeper",
        code,
        volumes=[{"name": "out", "hostPath": {"path": str(host), "type": "DirectoryOrCreate"}}],
        container={"volumeMounts": [{"name": "out", "mountPath": "/out"}]},
    )
    core.create_namespaced_pod(NAMESPACE, pod)
    wait_for(lambda: running_log(core, "sleeper"))
    started = time.monotonic()
    core.delete_namespaced_pod("sleeper", NAMESPACE, grace_period_seconds=20)
    wait_for(lambda: not k8s_emulator.pods(NAMESPACE))
    assert time.monotonic() - started < 5  # it stopped on SIGTERM, long before the grace ended
    assert (host / "terminated").read_text() == "SIGTERM"
    assert "Killing" in [e["reason"] for e in k8s_emulator.events(NAMESPACE)]
    with pytest.raises(ApiException) as error:
        core.read_namespaced_pod("sleeper", NAMESPACE)
    assert error.value.status == 404


def test_delete_kills_what_ignores_sigterm_after_the_grace_period(
    core: client.CoreV1Api,
) -> None:
    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print(os.getpid(), flush=True)\n"
        "time.sleep(60)\n"
    )
    core.create_namespaced_pod(NAMESPACE, python_pod("stubborn", code))
    pid = int(wait_for(lambda: running_log(core, "stubborn")))
    started = time.monotonic()
    answer = core.delete_namespaced_pod(
        "stubborn", NAMESPACE, body=client.V1DeleteOptions(grace_period_seconds=1)
    )
    assert answer.metadata.deletion_timestamp is not None
    time.sleep(0.3)
    terminating = core.read_namespaced_pod("stubborn", NAMESPACE)  # still there: it ignored SIGTERM
    assert terminating.metadata.deletion_grace_period_seconds == 1
    assert psutil.pid_exists(pid)

    def gone() -> bool:
        try:
            core.read_namespaced_pod("stubborn", NAMESPACE)
        except ApiException as error:
            return error.status == 404
        return False

    wait_for(gone)
    assert time.monotonic() - started >= 0.9
    assert not psutil.pid_exists(pid)


def test_unknown_pods_are_404(core: client.CoreV1Api) -> None:
    for call in (
        lambda: core.read_namespaced_pod("nobody", NAMESPACE),
        lambda: core.delete_namespaced_pod("nobody", NAMESPACE),
        lambda: log(core, "nobody"),
        lambda: core.patch_namespaced_pod(
            "nobody", NAMESPACE, {"metadata": {"labels": {"a": "b"}}}
        ),
    ):
        with pytest.raises(ApiException) as error:
            call()
        assert error.value.status == 404
        assert json.loads(error.value.body)["reason"] == "NotFound"


def test_create_conflicts_generate_name_and_validation(
    core: client.CoreV1Api, k8s_emulator: KubernetesEmulator
) -> None:
    core.create_namespaced_pod(NAMESPACE, python_pod("same", "pass"))
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(NAMESPACE, python_pod("same", "pass"))
    assert error.value.status == 409
    generated = python_pod("", "pass", metadata={"generateName": "job-"})
    name = core.create_namespaced_pod(NAMESPACE, generated).metadata.name
    assert name.startswith("job-") and len(name) == len("job-") + 5
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod(NAMESPACE, python_pod("Not_Valid", "pass"))
    assert error.value.status == 422
    assert k8s_emulator.created_pod_names() == ["same", name]


def test_label_selectors_and_metadata_patches(core: client.CoreV1Api) -> None:
    for name, labels in [
        ("p1", {"app": "train", "node": "0"}),
        ("p2", {"app": "train", "node": "1", "airflow-worker": "x"}),
        ("p3", {"app": "serve"}),
    ]:
        core.create_namespaced_pod(NAMESPACE, python_pod(name, "pass", metadata={"labels": labels}))

    def names(selector: str) -> list[str]:
        pods = core.list_namespaced_pod(NAMESPACE, label_selector=selector).items
        return sorted(pod.metadata.name for pod in pods)

    assert names("app=train") == ["p1", "p2"]
    assert names("app!=train") == ["p3"]
    assert names("node") == ["p1", "p2"]
    assert names("!node") == ["p3"]
    assert names("app=train,!airflow-worker,already_checked!=True") == ["p1"]
    assert names("node in (1, 2)") == ["p2"]
    core.patch_namespaced_pod(
        "p1",
        NAMESPACE,
        {"metadata": {"labels": {"already_checked": "True"}, "annotations": {"k": "v"}}},
    )
    assert names("app=train,!airflow-worker,already_checked!=True") == []
    patched = core.read_namespaced_pod("p1", NAMESPACE).metadata
    assert patched.labels == {"app": "train", "node": "0", "already_checked": "True"}
    assert patched.annotations == {"k": "v"}
    with pytest.raises(ApiException) as error:
        core.list_namespaced_pod(NAMESPACE, label_selector="app=(")
    assert error.value.status == 400
    by_field = core.list_namespaced_pod(NAMESPACE, field_selector="metadata.name=p3").items
    assert [pod.metadata.name for pod in by_field] == ["p3"]


def test_services_create_get_list_delete(
    core: client.CoreV1Api, k8s_emulator: KubernetesEmulator
) -> None:
    body = {
        "metadata": {"name": "train", "labels": {"run": "r1"}},
        "spec": {"clusterIP": "None", "selector": {"run": "r1"}, "ports": [{"port": 29500}]},
    }
    created = core.create_namespaced_service(NAMESPACE, body)
    assert created.spec.cluster_ip == "None" and created.spec.ports[0].target_port == 29500
    core.create_namespaced_service(
        NAMESPACE, {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    )
    assert core.read_namespaced_service("web", NAMESPACE).spec.cluster_ip.startswith("10.96.")
    listed = core.list_namespaced_service(NAMESPACE, label_selector="run=r1").items
    assert [s.metadata.name for s in listed] == ["train"]
    with pytest.raises(ApiException) as error:
        core.create_namespaced_service(NAMESPACE, body)
    assert error.value.status == 409
    core.delete_namespaced_service("train", NAMESPACE)
    assert [s["metadata"]["name"] for s in k8s_emulator.services(NAMESPACE)] == ["web"]
    with pytest.raises(ApiException) as error:
        core.read_namespaced_service("train", NAMESPACE)
    assert error.value.status == 404


def test_mount_paths_are_rewritten_to_shared_host_folders(
    core: client.CoreV1Api, k8s_emulator: KubernetesEmulator, tmp_path: Path
) -> None:
    host = tmp_path / "host"
    writer = (
        "import os, pathlib\n"
        "pathlib.Path(os.environ['SHARED'], 'msg').write_text('hello')\n"
        "pathlib.Path('/out/where.txt').write_text(os.getcwd())\n"
    )
    pod = {
        "metadata": {"name": "volumes"},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": RESTRICTED_POD_CONTEXT,
            "volumes": [
                {"name": "shared", "emptyDir": {}},
                {"name": "out", "hostPath": {"path": str(host), "type": "DirectoryOrCreate"}},
            ],
            "containers": [
                {
                    "name": "writer",
                    "image": "python:3.11",
                    "command": ["python3", "-c", writer],
                    "env": [{"name": "SHARED", "value": "/shared"}],
                    "workingDir": "/shared",
                    "securityContext": RESTRICTED_CONTAINER_CONTEXT,
                    "volumeMounts": [
                        {"name": "shared", "mountPath": "/shared"},
                        {"name": "out", "mountPath": "/out", "subPath": "writer"},
                    ],
                },
                {
                    "name": "reader",
                    "image": "busybox:1.36",
                    "command": ["sh", "-c"],
                    "args": [
                        "while [ ! -f /data/msg ]; do sleep 0.05; done; "
                        "cp /data/msg /out/copy.txt && echo copied"
                    ],
                    "securityContext": RESTRICTED_CONTAINER_CONTEXT,
                    "volumeMounts": [
                        {"name": "shared", "mountPath": "/data", "readOnly": True},
                        {"name": "out", "mountPath": "/out"},
                    ],
                },
            ],
        },
    }
    core.create_namespaced_pod(NAMESPACE, pod)
    assert finished(core, "volumes").status.phase == "Succeeded"
    assert log(core, "volumes", container="reader") == "copied\n"
    assert (host / "copy.txt").read_text() == "hello"
    shared = k8s_emulator.volume_path(NAMESPACE, {"name": "shared", "emptyDir": {}}, "volumes")
    assert (shared / "msg").read_text() == "hello"
    assert (host / "writer" / "where.txt").read_text() == str(shared)  # workingDir rewritten too
    with pytest.raises(ApiException) as error:  # two containers: which one?
        log(core, "volumes")
    assert error.value.status == 400


def test_environment_downward_api_and_cluster_dns(core: client.CoreV1Api) -> None:
    code = (
        "import json, os, sys\n"
        "keys = ['MASTER', 'PEER', 'POD', 'NAMESPACE', 'IP', 'EXPANDED', 'HOSTNAME',\n"
        "        'CUDA_VISIBLE_DEVICES']\n"
        "print(json.dumps({'env': {k: os.environ[k] for k in keys}, 'argv': sys.argv[1:]}))\n"
    )
    env = [
        {"name": "MASTER", "value": "worker-0.train.default.svc.cluster.local:29500"},
        {"name": "PEER", "value": "worker-1.train"},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "EXPANDED", "value": "$(POD)-suffix"},
    ]
    args = ["--master=tcp://worker-0.train.default.svc.cluster.local:29500", "$(POD)"]
    pod = python_pod(
        "worker-0-pod",
        code,
        hostname="worker-0",
        subdomain="train",
        container={"env": env, "args": args},
    )
    core.create_namespaced_pod(NAMESPACE, pod)
    assert finished(core, "worker-0-pod").status.phase == "Succeeded"
    seen = json.loads(log(core, "worker-0-pod"))
    assert seen["env"] == {
        "MASTER": "127.0.0.1:29500",
        "PEER": "127.0.0.1",
        "POD": "worker-0-pod",
        "NAMESPACE": "default",
        "IP": "127.0.0.1",
        "EXPANDED": "worker-0-pod-suffix",
        "HOSTNAME": "worker-0",
        "CUDA_VISIBLE_DEVICES": "",
    }
    assert seen["argv"] == ["--master=tcp://127.0.0.1:29500", "worker-0-pod"]


def test_init_containers_run_first_and_a_failing_one_fails_the_pod(
    core: client.CoreV1Api, tmp_path: Path
) -> None:
    host = tmp_path / "work"
    volumes = [{"name": "work", "hostPath": {"path": str(host)}}]
    mounts = [{"name": "work", "mountPath": "/work"}]

    def pod(name: str, init_exit: int) -> dict[str, Any]:
        init = {
            "name": "stage",
            "image": "python:3.11",
            "command": [
                "python",
                "-c",
                f"open('/work/{name}', 'w').write('staged'); exit({init_exit})",
            ],
            "volumeMounts": mounts,
            "securityContext": RESTRICTED_CONTAINER_CONTEXT,
        }
        code = f"print(open('/work/{name}').read())"
        return python_pod(
            name, code, volumes=volumes, initContainers=[init], container={"volumeMounts": mounts}
        )

    core.create_namespaced_pod(NAMESPACE, pod("good", 0))
    core.create_namespaced_pod(NAMESPACE, pod("bad", 1))
    good = finished(core, "good")
    assert good.status.phase == "Succeeded"
    assert good.status.init_container_statuses[0].state.terminated.reason == "Completed"
    assert log(core, "good", container="base") == "staged\n"
    bad = finished(core, "bad")
    assert bad.status.phase == "Failed"
    assert bad.status.init_container_statuses[0].state.terminated.exit_code == 1
    assert bad.status.container_statuses[0].state.waiting.reason == "PodInitializing"


def test_watch_reports_pod_changes(core: client.CoreV1Api) -> None:
    def create_soon() -> None:
        time.sleep(0.3)
        core.create_namespaced_pod(NAMESPACE, python_pod("watched", "import time; time.sleep(0.3)"))

    creator = threading.Thread(target=create_soon)
    creator.start()
    seen: list[tuple[str, str]] = []
    watcher = watch.Watch()
    for event in watcher.stream(
        core.list_namespaced_pod,
        NAMESPACE,
        field_selector="metadata.name=watched",
        timeout_seconds=10,
    ):
        seen.append((event["type"], event["object"].status.phase))
        if seen[-1][1] == "Succeeded":
            watcher.stop()
    creator.join()
    assert seen[0][0] == "ADDED"
    assert ("MODIFIED", "Running") in seen and seen[-1] == ("MODIFIED", "Succeeded")


def test_stop_kills_running_containers(tmp_path: Path) -> None:
    emulator = KubernetesEmulator(root=tmp_path / "stopped").start()
    api_client = config.new_client_from_config(
        config_file=str(emulator.write_kubeconfig(tmp_path / "kubeconfig"))
    )
    core = client.CoreV1Api(api_client)
    code = "import os, time; print(os.getpid(), flush=True); time.sleep(60)"
    core.create_namespaced_pod(NAMESPACE, python_pod("forever", code))
    pid = int(wait_for(lambda: running_log(core, "forever")))
    emulator.stop()
    api_client.close()
    assert not psutil.pid_exists(pid)


# -- the real KubernetesPodOperator --------------------------------------------------------


class _TaskInstance:
    """What the operator reads from ``context["ti"]`` in non-deferrable mode."""

    dag_id = "emulated_dag"
    task_id = "train"
    map_index = -1
    try_number = 1

    def __init__(self) -> None:
        self.xcoms: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcoms[key] = value


def _operator(kubeconfig: Path, cmds: list[str], **kwargs: Any) -> Any:
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator

    return KubernetesPodOperator(
        task_id="train",
        name="train",
        namespace=NAMESPACE,
        image=kwargs.pop("image", "python:3.11"),
        cmds=cmds,
        config_file=str(kubeconfig),
        in_cluster=False,
        get_logs=True,
        startup_check_interval_seconds=1,
        security_context=RESTRICTED_POD_CONTEXT,
        container_security_context=RESTRICTED_CONTAINER_CONTEXT,
        **kwargs,
    )


def _context() -> dict[str, Any]:
    return {
        "ti": _TaskInstance(),
        "run_id": "manual__1",
        "dag": SimpleNamespace(dag_id="emulated_dag"),
    }


def test_kubernetes_pod_operator_runs_a_pod_and_gets_its_logs(
    k8s_emulator: KubernetesEmulator, tmp_path: Path
) -> None:
    kubeconfig = k8s_emulator.write_kubeconfig(tmp_path / "kubeconfig")
    lines: list[tuple[str, str]] = []

    def collect(container: str, message: str) -> str:
        lines.append((container, message.strip()))
        return f"[{container}] {message}"

    code = "import time; print('epoch 1 loss 0.5', flush=True); time.sleep(0.2); print('done')"
    operator = _operator(kubeconfig, ["python", "-c", code], log_formatter=collect)
    context = _context()
    operator.execute(context)

    assert lines == [("base", "epoch 1 loss 0.5"), ("base", "done")]
    [name] = k8s_emulator.created_pod_names()
    assert context["ti"].xcoms == {"pod_name": name, "pod_namespace": NAMESPACE}
    assert k8s_emulator.pods(NAMESPACE) == []  # on_finish_action="delete_pod"
    events = [e["reason"] for e in k8s_emulator.events(NAMESPACE)]
    assert events[:2] == ["Scheduled", "Pulled"] and "Started" in events


def test_kubernetes_pod_operator_raises_when_the_command_fails(
    k8s_emulator: KubernetesEmulator, tmp_path: Path
) -> None:
    from airflow.providers.common.compat.sdk import AirflowException

    kubeconfig = k8s_emulator.write_kubeconfig(tmp_path / "kubeconfig")
    code = "import sys; print('diverged'); sys.exit(2)"
    operator = _operator(kubeconfig, ["python", "-c", code], on_finish_action="keep_pod")
    with pytest.raises(AirflowException, match="returned a failure"):
        operator.execute(_context())
    [pod] = k8s_emulator.pods(NAMESPACE)
    assert pod["metadata"]["labels"]["already_checked"] == "True"  # patched on cleanup
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 2


def test_kubernetes_pod_operator_fails_fast_on_a_missing_image(
    k8s_emulator: KubernetesEmulator, tmp_path: Path
) -> None:
    from airflow.providers.cncf.kubernetes.utils.pod_manager import PodLaunchFailedException
    from airflow.providers.common.compat.sdk import AirflowException

    kubeconfig = k8s_emulator.write_kubeconfig(tmp_path / "kubeconfig")
    operator = _operator(kubeconfig, ["python", "-c", "pass"], image="does-not-exist:latest")
    started = time.monotonic()
    with pytest.raises(AirflowException, match="returned a failure") as error:
        operator.execute(_context())
    assert time.monotonic() - started < 10  # not the 120 s startup timeout
    # The cleanup's failure is raised while handling the launch failure.
    launch = error.value.__context__
    assert isinstance(launch, PodLaunchFailedException)
    assert "Image cannot be pulled" in str(launch)
    assert k8s_emulator.pods(NAMESPACE) == []  # deleted on cleanup


def test_signals_reach_every_process_of_a_container(core: client.CoreV1Api) -> None:
    """A shell wrapper and its child are one container: SIGTERM reaches both."""
    script = "python -c 'import time; time.sleep(60)' & echo started; wait"
    pod = python_pod("wrapped", "", container={"command": ["sh", "-c", script]})
    core.create_namespaced_pod(NAMESPACE, pod)
    wait_for(lambda: running_log(core, "wrapped"))
    core.delete_namespaced_pod("wrapped", NAMESPACE, grace_period_seconds=5)
    started = time.monotonic()
    wait_for(lambda: not core.list_namespaced_pod(NAMESPACE).items)
    assert time.monotonic() - started < 3  # both ended on SIGTERM, long before the grace


def test_a_native_sidecar_runs_beside_the_main_container_and_is_stopped_after_it(
    core: client.CoreV1Api, tmp_path: Path
) -> None:
    marker = tmp_path / "sidecar-stopped"
    sidecar = (
        "import pathlib, signal, sys, time\n"
        "def stop(*_):\n"
        f"    pathlib.Path({str(marker)!r}).write_text('stopped'); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('sidecar up', flush=True)\n"
        "while True: time.sleep(0.05)\n"
    )
    pod = python_pod("with-sidecar", "import time; time.sleep(0.5); print('main done')")
    pod["spec"]["initContainers"] = [
        {"name": "sync", "image": "python:3.11", "restartPolicy": "Always",
         "command": ["python", "-c", sidecar], "securityContext": RESTRICTED_CONTAINER_CONTEXT},
    ]  # fmt: skip
    core.create_namespaced_pod(NAMESPACE, pod)
    running = wait_for(lambda: phase(core, "with-sidecar") == "Running")
    assert running
    ended = finished(core, "with-sidecar")
    assert ended.status.phase == "Succeeded"
    assert marker.read_text() == "stopped"  # SIGTERM once the main container had ended
    [sync] = ended.status.init_container_statuses
    assert sync.state.terminated.exit_code == 0
    assert log(core, "with-sidecar", container="sync") == "sidecar up\n"


def test_every_request_is_recorded_with_its_method_path_and_client(
    core: client.CoreV1Api, k8s_emulator: KubernetesEmulator
) -> None:
    core.api_client.user_agent = "recording-test"
    core.create_namespaced_service(
        NAMESPACE, {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}
    )
    with pytest.raises(ApiException):  # refused requests are recorded too
        core.read_namespaced_pod("missing", NAMESPACE)
    core.list_namespaced_event(NAMESPACE, field_selector="involvedObject.name=web")
    assert [tuple(r) for r in k8s_emulator.requests()] == [
        ("POST", f"/api/v1/namespaces/{NAMESPACE}/services", "recording-test"),
        ("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/missing", "recording-test"),
        ("GET", f"/api/v1/namespaces/{NAMESPACE}/events?fieldSelector=involvedObject.name%3Dweb",
         "recording-test"),
    ]  # fmt: skip
