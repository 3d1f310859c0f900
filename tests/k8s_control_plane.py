"""A real Kubernetes control plane for the tests: etcd, kube-apiserver, kube-scheduler and
kube-controller-manager built from Go modules (``tools/k8s/build.sh``: k8s.io/kubernetes
v1.37.2, etcd v3.6), started on 127.0.0.1 with free ports in a folder of their own, and
stopped at the end, as ``tests/radosgw.py`` does for Ceph.

The apiserver runs as a cluster's would: client certificates and service-account tokens for
authentication, Node and RBAC authorization, and the default admission chain with
``PodSecurity``. An admin (``system:masters``) client certificate is made for the tests, which
act as the launcher's service accounts by impersonation. Each process's log is kept in the
folder; a start that fails says which process and quotes its last lines.

Nodes: ``tests.k8s_node_agent`` runs what the scheduler binds to its nodes as local processes
and serves their logs to the apiserver over TLS (the apiserver reaches it with a client
certificate of its own, ``--kubelet-client-certificate``). ``register_node`` alone makes a Node
that only the scheduler judges (a Node object whose status says Ready with its capacity, as a
kubelet would post it; nothing runs what is bound there): ``delete_node`` removes it again.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import yaml

from hooks.local.local_process import free_port
from octotrain.settings import REPO_ROOT

BUILD = REPO_ROOT / "tools" / "k8s" / "build.sh"
BUILD_SECONDS = 3600  # a cold build of the four binaries: about 13 min on 2 idle cores
START_SECONDS = 60.0  # each process; the apiserver is ready in about 2.5 s on an idle machine
STOP_SECONDS = 20.0
QUOTED_LINES = 20
# What the apiserver audits: the requests of workloads' service accounts (the launcher's),
# not those of the control plane's own controllers.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    userGroups: ["system:serviceaccounts:kube-system"]
  - level: Request
    userGroups: ["system:serviceaccounts"]
    verbs: ["create"]
    resources: [{group: "", resources: ["pods"]}]
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
"""
LOOPBACK = "127.0.0.1"
# A node whose heartbeat (its Lease) is this old is NotReady (the default is 50 s), and its
# pods are evicted this long after (the default is 300 s): a lost node's runs go on sooner.
NODE_GRACE_SECONDS = 20
TOLERATION_SECONDS = 2
GPU = "nvidia.com/gpu"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
# What a Node's status says of its machine (the scheduler and kubectl read some of it).
NODE_INFO = {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
             "osImage": "octotrain test node", "containerRuntimeVersion": "processes://1",
             "kubeletVersion": "v1.37.2", "kubeProxyVersion": "", "operatingSystem": "linux",
             "architecture": "amd64"}  # fmt: skip


class ControlPlaneFailed(RuntimeError):
    """The control plane could not be built or started; the message says which part, why."""


@dataclass(frozen=True)
class ControlPlane:
    """Where the apiserver answers, and the admin's kubeconfig for it."""

    url: str
    folder: Path
    kubeconfig: Path
    ca: Path
    admin_cert: Path
    admin_key: Path
    # Stops the kube-apiserver and starts it again on the same port and etcd; returns once it
    # is ready (what a cluster's control-plane upgrade or a crashed apiserver does to clients).
    restart_apiserver: Callable[[], None] = field(compare=False, repr=False)

    @property
    def audit_log(self) -> Path:
        """The apiserver's audit log: every request of a service account outside
        kube-system, at the ``Metadata`` level (who, which verb on what, the answer's code)."""
        return self.folder / "audit.log"

    def audited(self, username: str, *, since: datetime | None = None) -> list[dict[str, Any]]:
        """The audit events (``audit.k8s.io/v1`` Event, one per request) of ``username``, those
        received from ``since`` on when given (the plane is the session's: other modules' runs
        act as the same accounts)."""
        if not self.audit_log.exists():
            return []
        lines = self.audit_log.read_text().splitlines()
        events = [event for line in lines if (event := json.loads(line))["user"]["username"]
                  == username]  # fmt: skip
        if since is None:
            return events
        return [event for event in events
                if datetime.fromisoformat(event["requestReceivedTimestamp"]) >= since]  # fmt: skip

    def created_pods(self) -> list[dict[str, Any]]:
        """Every pod a workload's service account created, as it sent it (the audit log's
        ``requestObject``)."""
        if not self.audit_log.exists():
            return []
        events = [json.loads(line) for line in self.audit_log.read_text().splitlines()]
        return [event["requestObject"] for event in events if event["verb"] == "create"
                and (event.get("objectRef") or {}).get("resource") == "pods"
                and "requestObject" in event]  # fmt: skip

    def client(self) -> httpx.Client:
        """An httpx client of the apiserver as its admin."""
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.admin_cert), str(self.admin_key))
        return httpx.Client(base_url=self.url, verify=context, timeout=30)


def binaries() -> tuple[Path, Path]:
    """The k8s and etcd bin folders, built (once per machine, cached by version) if needed."""
    try:
        built = subprocess.run(["bash", str(BUILD), "k8s", "etcd"], capture_output=True,
                               text=True, check=True, timeout=BUILD_SECONDS)  # fmt: skip
    except subprocess.CalledProcessError as error:
        tail = "\n".join(error.stderr.splitlines()[-QUOTED_LINES:])
        raise ControlPlaneFailed(f"tools/k8s/build.sh failed:\n{tail}") from None
    k8s, etcd = (Path(line) for line in built.stdout.split())
    return k8s, etcd


def _certificates(pki: Path) -> None:
    """A CA, the apiserver's serving certificate, the service-account key pair and the admin's
    client certificate (``O=system:masters``), with openssl."""
    pki.mkdir(parents=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=pki, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-keyout", "ca.key",
            "-out", "ca.crt", "-subj", "/CN=octotrain-test-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    names = "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default"
    (pki / "server.ext").write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        f"extendedKeyUsage=serverAuth\nsubjectAltName={names}\n"
    )
    (pki / "client.ext").write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=clientAuth\n"
    )
    for name, subject, extensions in (
        ("apiserver", "/CN=kube-apiserver", "server.ext"),
        ("admin", "/O=system:masters/CN=octotrain-admin", "client.ext"),
        ("kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client", "client.ext"),
    ):
        issue_certificate(pki, name, subject, pki / extensions)
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key")
    openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub")


def issue_certificate(pki: Path, name: str, subject: str, extensions: Path) -> None:
    """``pki/<name>.crt`` and its key, signed by the plane's CA (``pki/ca.crt``)."""
    for args in (
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
         f"{name}.csr", "-subj", subject],
        ["x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
         "-CAcreateserial", "-days", "2", "-extfile", str(extensions), "-out", f"{name}.crt"],
    ):  # fmt: skip
        subprocess.run(["openssl", *args], cwd=pki, check=True, capture_output=True)


def _kubeconfig(path: Path, url: str, pki: Path) -> None:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "admin",
        "clusters": [{"name": "test", "cluster": {"server": url,
                                                  "certificate-authority": str(pki / "ca.crt")}}],
        "users": [{"name": "admin", "user": {"client-certificate": str(pki / "admin.crt"),
                                             "client-key": str(pki / "admin.key")}}],
        "contexts": [{"name": "admin", "context": {"cluster": "test", "user": "admin"}}],
    }))  # fmt: skip


class Processes:
    """The plane's processes by name, each with its output appended to ``folder/<name>.log``:
    one may be stopped and started again with the same command (a restart), and all are
    stopped, in the reverse order of their starts, by ``stop_all``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.commands: dict[str, list[str]] = {}
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        with (self.folder / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)  # fmt: skip
        self.commands[name], self.running[name] = command, process
        return process

    def restart(self, name: str) -> subprocess.Popen[bytes]:
        self.stop(name)
        return self.start(name, self.commands[name])

    def stop(self, name: str) -> None:
        """SIGTERM, then SIGKILL after ``STOP_SECONDS``."""
        process = self.running.pop(name)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def stop_all(self) -> None:
        for name in reversed(list(self.running)):
            self.stop(name)


def wait_ready(name: str, process: subprocess.Popen[bytes], ready: Callable[[], bool],
          folder: Path) -> None:  # fmt: skip
    """Until ``ready()``; a process that exits or a start past ``START_SECONDS`` fails, with
    the last lines of its log."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            if ready():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    lines = (folder / f"{name}.log").read_text(errors="replace").splitlines()[-QUOTED_LINES:]
    state = f"exited with {process.returncode}" if process.poll() is not None else "not ready"
    raise ControlPlaneFailed(f"{name} {state}; the end of its log:\n" + "\n".join(lines))


def _healthy(url: str) -> bool:
    """A component's ``/healthz`` (its own self-signed certificate: not verified)."""
    return httpx.get(url, verify=False, timeout=2).text == "ok"


@contextmanager
def control_plane(folder: Path) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, kube-scheduler and kube-controller-manager in ``folder``, ready;
    each stopped, in the reverse order, when the context ends (also after a failed start)."""
    k8s, etcd_bin = binaries()
    pki = folder / "pki"
    _certificates(pki)
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    url = f"https://127.0.0.1:{api_port}"
    kubeconfig = folder / "admin.kubeconfig"
    _kubeconfig(kubeconfig, url, pki)
    processes = Processes(folder)

    def restart_apiserver() -> None:
        with plane.client() as api:
            restarted = processes.restart("kube-apiserver")
            wait_ready("kube-apiserver", restarted, lambda: api.get("/readyz").text == "ok", folder)

    plane = ControlPlane(url, folder, kubeconfig, pki / "ca.crt", pki / "admin.crt",
                         pki / "admin.key", restart_apiserver)  # fmt: skip
    (folder / "audit-policy.yaml").write_text(AUDIT_POLICY)
    try:
        with plane.client() as api:
            etcd = processes.start("etcd", [
                str(etcd_bin / "etcd"), "--name=test", f"--data-dir={folder / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=test=http://127.0.0.1:{peer_port}", "--unsafe-no-fsync",
            ])  # fmt: skip
            health = f"http://127.0.0.1:{etcd_port}/health"
            healthy = lambda: httpx.get(health, timeout=2).status_code == 200  # noqa: E731
            wait_ready("etcd", etcd, healthy, folder)
            apiserver = processes.start("kube-apiserver", [
                str(k8s / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none", f"--secure-port={api_port}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}", f"--service-account-issuer={url}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-cluster-ip-range=10.0.0.0/24", "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=PodSecurity",
                f"--cert-dir={folder / 'apiserver-certs'}",
                f"--kubelet-client-certificate={pki / 'kubelet-client.crt'}",
                f"--kubelet-client-key={pki / 'kubelet-client.key'}",
                f"--kubelet-certificate-authority={pki / 'ca.crt'}",
                "--kubelet-preferred-address-types=InternalIP",
                f"--audit-policy-file={folder / 'audit-policy.yaml'}",
                f"--audit-log-path={plane.audit_log}", "--audit-log-mode=blocking",
                # A pod on a node that stopped answering is evicted this soon (not 5 min).
                f"--default-not-ready-toleration-seconds={TOLERATION_SECONDS}",
                f"--default-unreachable-toleration-seconds={TOLERATION_SECONDS}",
            ])  # fmt: skip
            wait_ready("kube-apiserver", apiserver, lambda: api.get("/readyz").text == "ok", folder)
            common = [f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
                      f"--authorization-kubeconfig={kubeconfig}", "--bind-address=127.0.0.1",
                      "--leader-elect=false"]  # fmt: skip
            for name, extra in (
                ("kube-scheduler", []),
                ("kube-controller-manager", [
                    f"--service-account-private-key-file={pki / 'sa.key'}",
                    f"--root-ca-file={pki / 'ca.crt'}", "--use-service-account-credentials=true",
                    "--controllers=*,-nodeipam",
                    f"--node-monitor-grace-period={NODE_GRACE_SECONDS}s",
                ]),
            ):  # fmt: skip
                port = free_port()
                process = processes.start(name, [
                    str(k8s / name), *common, f"--secure-port={port}",
                    f"--cert-dir={folder / f'{name}-certs'}", *extra,
                ])  # fmt: skip
                wait_ready(name, process, partial(_healthy, f"https://127.0.0.1:{port}/healthz"),
                      folder)  # fmt: skip
        yield plane
    finally:
        processes.stop_all()


def register_node(
    plane: ControlPlane, name: str, *, cpu: str, memory: str, gpus: int = 0, port: int = 0
) -> None:
    """A Node of ``cpu``, ``memory`` and ``gpus`` (``nvidia.com/gpu``) that the scheduler may
    place pods on: its object, then its status (Ready, its capacity, 127.0.0.1 and its
    kubelet's ``port`` when one serves it), as a kubelet registers itself."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}}}  # fmt: skip
    capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpus:
        capacity[GPU] = str(gpus)
    now = rfc3339_now()
    status = {"status": {
        "capacity": capacity, "allocatable": capacity,
        "addresses": [{"type": "InternalIP", "address": LOOPBACK},
                      {"type": "Hostname", "address": name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        "nodeInfo": NODE_INFO,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "test node", "lastHeartbeatTime": now,
                        "lastTransitionTime": now}],
    }}  # fmt: skip
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": name, "namespace": "kube-node-lease"},
             "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                      "renewTime": micro_time_now()}}  # fmt: skip
    with plane.client() as api:
        made = api.post("/api/v1/nodes", json=node)
        assert made.status_code in (201, 409), made.text
        patched = api.patch(f"/api/v1/nodes/{name}/status", json=status,
                            headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip
        assert patched.status_code == 200, patched.text
        leased = api.post(f"{LEASES}", json=lease)
        assert leased.status_code in (201, 409), leased.text
    # The node lifecycle controller taints a new node not-ready until it has seen it Ready.
    wait_untainted(plane, [name])


def wait_untainted(plane: ControlPlane, names: list[str]) -> None:
    """Until no node of ``names`` carries a taint: the node lifecycle controller taints a node
    not-ready until it has seen it Ready, and again when its Lease went stale (say, while the
    apiserver was down), until the next heartbeat."""
    deadline = time.monotonic() + START_SECONDS
    with plane.client() as api:
        for name in names:
            while taints := api.get(f"/api/v1/nodes/{name}").json()["spec"].get("taints"):
                if time.monotonic() > deadline:
                    raise ControlPlaneFailed(f"node {name} kept its taints: {taints}")
                time.sleep(0.1)


def renew_lease(api: httpx.Client, name: str) -> None:
    """Node ``name``'s heartbeat, as a kubelet renews its Lease (every 10 s by default)."""
    renewed = api.patch(f"{LEASES}/{name}", json={"spec": {"renewTime": micro_time_now()}},
                        headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip
    renewed.raise_for_status()


def report_ready(api: httpx.Client, name: str) -> None:
    """Node ``name`` Ready again when the API shows it otherwise, as a kubelet's status sync
    does: the node lifecycle controller marks a node whose Lease went stale (its apiserver was
    down a while) Ready=Unknown and taints it unreachable, and only the node's own Ready ends
    that."""
    node = api.get(f"/api/v1/nodes/{name}")
    node.raise_for_status()
    conditions = node.json().get("status", {}).get("conditions") or []
    if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
        return
    now = rfc3339_now()
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test node",
             "lastHeartbeatTime": now, "lastTransitionTime": now}  # fmt: skip
    patched = api.patch(f"/api/v1/nodes/{name}/status", json={"status": {"conditions": [ready]}},
                        headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip
    patched.raise_for_status()


def delete_node(plane: ControlPlane, name: str) -> None:
    """Node ``name`` and its Lease gone (a test's nodes do not outlive it)."""
    with plane.client() as api:
        for path in (f"/api/v1/nodes/{name}", f"{LEASES}/{name}"):
            gone = api.delete(path)
            assert gone.status_code in (200, 404), gone.text


def rfc3339_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def micro_time_now() -> str:
    """Now as a Kubernetes ``MicroTime`` (a Lease's times)."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


def create(plane: ControlPlane, path: str, body: dict[str, Any]) -> None:
    """``body`` created at ``path`` unless it exists already."""
    with plane.client() as api:
        answer = api.post(path, json=body)
    assert answer.status_code in (201, 409), answer.text


def service_account_kubeconfig(
    plane: ControlPlane, path: Path, *, account_namespace: str, account: str, namespace: str
) -> Path:
    """A kubeconfig at ``path`` that acts as service account ``account`` of
    ``account_namespace`` (created if missing; a token of the TokenRequest API, valid for a
    day), its context's namespace ``namespace``: how a launcher in a cluster is seen."""
    create(
        plane,
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": account_namespace}},
    )
    accounts = f"/api/v1/namespaces/{account_namespace}/serviceaccounts"
    create(plane, accounts, {"apiVersion": "v1", "kind": "ServiceAccount",
                             "metadata": {"name": account}})  # fmt: skip
    with plane.client() as api:
        answer = api.post(f"{accounts}/{account}/token",
                          json={"spec": {"expirationSeconds": 86400}})  # fmt: skip
    assert answer.status_code == 201, answer.text
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": account,
        "clusters": [{"name": "test", "cluster": {"server": plane.url,
                                                  "certificate-authority": str(plane.ca)}}],
        "users": [{"name": account, "user": {"token": answer.json()["status"]["token"]}}],
        "contexts": [{"name": account, "context": {"cluster": "test", "user": account,
                                                    "namespace": namespace}}],
    }))  # fmt: skip
    return path
