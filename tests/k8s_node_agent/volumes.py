"""Pod volumes as folders on this machine.

- ``emptyDir``: a folder of the pod's own, under the node agent's root, gone with the pod;
- ``hostPath``: the path as given (created for type ``""`` and ``DirectoryOrCreate``);
- ``persistentVolumeClaim``: ``<root>/volumes/<namespace>/pvc/<claimName>``, shared by every
  pod that mounts the claim, kept after the pods;
- ``nfs``: ``<root>/volumes/nfs/<server>/<path>``, shared like an export;
- ``configMap`` and ``secret``: a folder of the pod's own holding the object's keys as files
  (as the kubelet projects them);
- anything else (``csi``, ``projected``, ``downwardAPI`` ...): ``<root>/volumes/<namespace>/
  <volume name>``, shared by the pods that name a volume alike.

``KubernetesEmulator.volume_path`` tells a test where a volume lives, so it can put a
dataset into a claim or read what a training wrote.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Looks up a ConfigMap or Secret by (kind, namespace, name); None when there is none.
Lookup = Callable[[str, str, str], dict[str, Any] | None]


class MountError(Exception):
    """A volume the kubelet cannot set up (``FailedMount``): the pod stays
    ``ContainerCreating``."""

    def __init__(self, volume: str, message: str) -> None:
        super().__init__(f'MountVolume.SetUp failed for volume "{volume}" : {message}')
        self.volume = volume


def volume_path(root: Path, pod_dir: Path, namespace: str, volume: dict[str, Any]) -> Path:
    """The host path backing ``volume`` of a pod whose own folder is ``pod_dir``."""
    name = volume["name"]
    if "emptyDir" in volume or "configMap" in volume or "secret" in volume:
        return pod_dir / "volumes" / name
    if "hostPath" in volume:
        return Path(volume["hostPath"]["path"])
    if "persistentVolumeClaim" in volume:
        return root / "volumes" / namespace / "pvc" / volume["persistentVolumeClaim"]["claimName"]
    if "nfs" in volume:
        nfs = volume["nfs"]
        return root / "volumes" / "nfs" / nfs.get("server", "") / nfs.get("path", "").lstrip("/")
    return root / "volumes" / namespace / name


def prepare_volume(
    root: Path, pod_dir: Path, namespace: str, volume: dict[str, Any], lookup: Lookup
) -> Path:
    """Set the volume up on this machine (as the kubelet's volume manager would) and return
    its host path; ``MountError`` when it cannot be."""
    path = volume_path(root, pod_dir, namespace, volume)
    name = volume["name"]
    if "hostPath" in volume:
        kind = volume["hostPath"].get("type") or ""
        if kind in ("", "DirectoryOrCreate"):
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise MountError(name, f"mkdir {path}: {error.strerror}") from error
        elif kind == "FileOrCreate":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(exist_ok=True)
        elif kind == "Directory" and not path.is_dir():
            raise MountError(name, f"hostPath type check failed: {path} is not a directory")
        elif kind == "File" and not path.is_file():
            raise MountError(name, f"hostPath type check failed: {path} is not a file")
        elif kind not in ("Directory", "File") and not path.exists():
            raise MountError(name, f"hostPath type check failed: {path} does not exist")
        return path
    path.mkdir(parents=True, exist_ok=True)
    for source_kind in ("configMap", "secret"):
        if source_kind in volume:
            _project(path, namespace, source_kind, volume[source_kind], name, lookup)
    return path


def _project(
    path: Path,
    namespace: str,
    kind: str,
    source: dict[str, Any],
    volume: str,
    lookup: Lookup,
) -> None:
    object_name = source.get("name") if kind == "configMap" else source.get("secretName")
    found = lookup("configmaps" if kind == "configMap" else "secrets", namespace, object_name or "")
    if found is None:
        if source.get("optional"):
            return
        label = "configmap" if kind == "configMap" else "secret"
        raise MountError(volume, f'{label} "{object_name}" not found')
    files = object_data(found)
    items = source.get("items")
    selected = {item["key"]: item.get("path", item["key"]) for item in items} if items else None
    for key, content in files.items():
        if selected is not None and key not in selected:
            continue
        target = path / (selected[key] if selected else key)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def object_data(obj: dict[str, Any]) -> dict[str, bytes]:
    """The keys of a ConfigMap (``data``, ``binaryData``) or Secret (``data``, base64) as
    bytes."""
    if obj.get("kind") == "Secret":
        return {key: base64.b64decode(value) for key, value in (obj.get("data") or {}).items()}
    files = {key: str(value).encode() for key, value in (obj.get("data") or {}).items()}
    for key, value in (obj.get("binaryData") or {}).items():
        files[key] = base64.b64decode(value)
    return files


def mount_host_path(volume_root: Path, mount: dict[str, Any]) -> Path:
    """The host path a volume mount shows at its ``mountPath`` (``subPath`` honoured,
    created when missing as the kubelet does)."""
    sub_path = (mount.get("subPath") or "").strip("/")
    if not sub_path:
        return volume_root
    target = volume_root / sub_path
    if not target.exists():
        target.mkdir(parents=True, exist_ok=True)
    return target
