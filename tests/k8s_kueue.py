"""Kueue on the tests' real control plane: its manager built from the Go module
``sigs.k8s.io/kueue`` (``tools/k8s/build.sh kueue``), its CRDs installed from that module, its
plain-Pod integration on, and its webhooks served to the apiserver on 127.0.0.1 (``url:``
webhooks with a serving certificate signed by the plane's CA, instead of the in-cluster
Service and Kueue's own certificate rotation). Stopped with its context: the webhook
configurations are removed first, then the manager stops, then the CRDs (and every Kueue object)
go, so the plane goes on as if Kueue had never been there.

As installed upstream but for what a test machine needs: Kueue's visibility server and its
metrics are off (an aggregated API this apiserver is not set up for; metrics served with
certificates of their own), every endpoint binds to 127.0.0.1
with a free port, and the pod webhooks see only pods that name a queue (an ``objectSelector``
on ``kueue.x-k8s.io/queue-name``), so that the session's other tests never wait on Kueue.
Test equipment.
"""

from __future__ import annotations

import base64
import copy
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from hooks.local.local_process import free_port
from octotrain.settings import REPO_ROOT
from tests.k8s_control_plane import (
    BUILD,
    BUILD_SECONDS,
    START_SECONDS,
    ControlPlane,
    ControlPlaneFailed,
    Processes,
    create,
    issue_certificate,
    wait_ready,
)

KUEUE_MODULE_DIR = REPO_ROOT / "tools" / "k8s" / "kueue"
NAMESPACE = "kueue-system"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WEBHOOK_PATHS = {
    "MutatingWebhookConfiguration":
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration":
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
}  # fmt: skip
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# The webhooks kept: the plain Pod's, and those of Kueue's own kinds.
KEPT_PATHS = ("/mutate--v1-pod", "/validate--v1-pod", "-kueue-x-k8s-io-")


@dataclass(frozen=True)
class Kueue:
    """A running Kueue: its manager's log, and the CRDs it brought."""

    folder: Path
    crds: tuple[str, ...]

    @property
    def log(self) -> Path:
        return self.folder / "kueue.log"


def kueue_binary() -> Path:
    try:
        built = subprocess.run(["bash", str(BUILD), "kueue"], capture_output=True, text=True,
                               check=True, timeout=BUILD_SECONDS)  # fmt: skip
    except subprocess.CalledProcessError as error:
        tail = "\n".join(error.stderr.splitlines()[-20:])
        raise ControlPlaneFailed(f"tools/k8s/build.sh kueue failed:\n{tail}") from None
    return Path(built.stdout.strip()) / "kueue"


def kueue_module() -> Path:
    """Where the Go module ``sigs.k8s.io/kueue`` of ``tools/k8s/kueue/go.mod`` lies (its
    ``config/components``: CRDs, webhooks)."""
    found = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue"],
                           cwd=KUEUE_MODULE_DIR, capture_output=True, text=True,
                           check=True)  # fmt: skip
    return Path(found.stdout.strip())


@contextmanager
def kueue(
    plane: ControlPlane, folder: Path, *, configuration: dict[str, Any] | None = None
) -> Iterator[Kueue]:
    """Kueue's manager on ``plane``, ``configuration`` over the tests' (say, its fair
    sharing)."""
    binary, module = kueue_binary(), kueue_module() / "config" / "components"
    folder.mkdir(parents=True, exist_ok=True)
    crds = _install_crds(plane, module / "crd" / "bases")
    create(plane, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": NAMESPACE}})  # fmt: skip
    certs = _serving_certificate(plane, folder / "certs")
    webhook_port, health_port = free_port(), free_port()
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},  # off: it wants certificates of its own
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(certs)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "integrations": {"frameworks": ["pod"]},
    } | (configuration or {})))  # fmt: skip
    processes = Processes(folder)
    configurations: list[tuple[str, str]] = []
    try:
        manager = processes.start("kueue", [
            str(binary), f"--config={config}", f"--kubeconfig={plane.kubeconfig}",
            "--feature-gates=VisibilityOnDemand=false",
        ])  # fmt: skip
        ready = f"http://127.0.0.1:{health_port}/readyz"
        wait_ready("kueue", manager, lambda: httpx.get(ready, timeout=2).status_code == 200,
                   folder)  # fmt: skip
        for document in yaml.safe_load_all((module / "webhook" / "manifests.yaml").read_text()):
            served = _served_here(document, webhook_port, plane.ca)
            create(plane, WEBHOOK_PATHS[served["kind"]], served)
            configurations.append((served["kind"], served["metadata"]["name"]))
        yield Kueue(folder, crds)
    finally:
        with plane.client() as api:
            for kind, name in configurations:
                api.delete(f"{WEBHOOK_PATHS[kind]}/{name}")
            processes.stop_all()
            for name in crds:  # the plane without Kueue again, its objects with them
                api.delete(f"{CRDS}/{name}")


def _install_crds(plane: ControlPlane, bases: Path) -> tuple[str, ...]:
    """Every CRD of Kueue's, created and Established."""
    names = []
    with plane.client() as api:
        for path in sorted(bases.glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            answer = api.post(CRDS, json=crd)
            assert answer.status_code in (201, 409), answer.text
            names.append(crd["metadata"]["name"])
        deadline = time.monotonic() + START_SECONDS
        for name in names:
            while not _established(api.get(f"{CRDS}/{name}").json()):
                if time.monotonic() > deadline:
                    raise ControlPlaneFailed(f"Kueue's CRD {name} was never Established")
                time.sleep(0.1)
    return tuple(names)


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _serving_certificate(plane: ControlPlane, certs: Path) -> Path:
    """``tls.crt`` and ``tls.key`` for 127.0.0.1, signed by the plane's CA, in ``certs``."""
    pki = plane.ca.parent
    issue_certificate(pki, "kueue-webhook", "/CN=kueue-webhook", pki / "server.ext")
    certs.mkdir(parents=True, exist_ok=True)
    shutil.copy(pki / "kueue-webhook.crt", certs / "tls.crt")
    shutil.copy(pki / "kueue-webhook.key", certs / "tls.key")
    return certs


def _served_here(document: dict[str, Any], port: int, ca: Path) -> dict[str, Any]:
    """A webhook configuration of Kueue's manifests, its webhooks reached at 127.0.0.1:port
    (only the plain Pod's and Kueue's own kinds'; the Pod's for pods that name a queue)."""
    served = copy.deepcopy(document)
    bundle = base64.b64encode(ca.read_bytes()).decode()
    kept = []
    for webhook in served["webhooks"]:
        path = webhook["clientConfig"]["service"]["path"]
        if not any(part in path for part in KEPT_PATHS):
            continue
        webhook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
        if path.endswith("--v1-pod"):
            webhook["namespaceSelector"] = {"matchExpressions": [{
                "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                "values": ["kube-system", NAMESPACE]}]}  # fmt: skip
            webhook["objectSelector"] = {"matchExpressions": [{"key": QUEUE_LABEL,
                                                               "operator": "Exists"}]}  # fmt: skip
        kept.append(webhook)
    served["webhooks"] = kept
    return served
