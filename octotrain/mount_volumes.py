"""Resource mounts as Kubernetes volumes: the read-only volume a resource spec names in
``config/mount_volumes.toml``, and one ``volumeMount`` per mounted dataset version (its object
prefix as ``subPath``, at ``$MOUNTS/<name>``). Plain dicts in the Kubernetes API's shape, for
the pod builder."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from octotrain.settings import REPO_ROOT

MOUNT_VOLUMES_FILE = REPO_ROOT / "config" / "mount_volumes.toml"
VOLUME_NAME = "octotrain-resource-mounts"


@lru_cache(maxsize=4)
def mount_volumes(path: Path = MOUNT_VOLUMES_FILE) -> dict[str, dict[str, Any]]:
    """The configured volumes by name."""
    return dict(tomllib.loads(path.read_text(encoding="utf-8")).get("volumes", {}))


def kubernetes_mounts(
    volume: str, mounts: list[tuple[str, str]], mounts_dir: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The pod volume for ``volume`` and the container's volume mounts of
    ``mounts`` [(name, object prefix)] under ``mounts_dir``."""
    volumes = mount_volumes()
    if volume not in volumes:
        known = ", ".join(sorted(volumes)) or "none"
        raise KeyError(f"no mount volume '{volume}' in {MOUNT_VOLUMES_FILE} (it has: {known})")
    return (
        {"name": VOLUME_NAME, **volumes[volume]},
        [
            {
                "name": VOLUME_NAME,
                "mountPath": f"{mounts_dir.rstrip('/')}/{name}",
                "subPath": prefix,
                "readOnly": True,
            }
            for name, prefix in mounts
        ],
    )
