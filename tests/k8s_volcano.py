"""Volcano's PodGroup kind on the tests' real control plane: its CRD, as Volcano publishes it in
the Go module ``volcano.sh/volcano`` (``config/crd/volcano/bases``), fetched through the Go
module proxy into Go's module cache (once per machine and version) and installed for a test.
No Volcano scheduler runs: the tests hold the launcher's PodGroup and pods to Volcano's schema
and the API server's checks, not to Volcano's scheduling."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.k8s_control_plane import ControlPlane

VOLCANO_MODULE = "volcano.sh/volcano@v1.10.0"
PODGROUP_CRD = "config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ESTABLISHED_SECONDS = 30


def podgroup_crd_file() -> Path:
    """The PodGroup CRD of Volcano's module, downloaded when Go's cache lacks it."""
    downloaded = subprocess.run(["go", "mod", "download", "-json", VOLCANO_MODULE],
                                capture_output=True, text=True, check=True)  # fmt: skip
    return Path(json.loads(downloaded.stdout)["Dir"]) / PODGROUP_CRD


@contextmanager
def podgroup_kind(plane: ControlPlane) -> Iterator[str]:
    """The PodGroup CRD installed and Established; removed (with every PodGroup) afterwards."""
    crd = yaml.safe_load(podgroup_crd_file().read_text())
    name = crd["metadata"]["name"]
    with plane.client() as api:
        answer = api.post(CRDS, json=crd)
        assert answer.status_code in (201, 409), answer.text
        try:
            deadline = time.monotonic() + ESTABLISHED_SECONDS
            while not _established(api.get(f"{CRDS}/{name}").json()):
                assert time.monotonic() < deadline, f"{name} was never Established"
                time.sleep(0.1)
            yield name
        finally:
            api.delete(f"{CRDS}/{name}")


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
