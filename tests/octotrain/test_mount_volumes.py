"""Resource mounts as Kubernetes volumes: the spec's volume from config, one read-only
sub-path mount per dataset version; specs may only name configured volumes."""

from __future__ import annotations

import pytest

from octotrain.catalog.documents import ResourceSpecDocument
from octotrain.documents import parse_document
from octotrain.errors import InvalidInput
from octotrain.mount_volumes import VOLUME_NAME, kubernetes_mounts, mount_volumes


def test_the_configured_volumes_are_kubernetes_volume_sources() -> None:
    volumes = mount_volumes()
    assert set(volumes) == {"datasets-pvc", "datasets-nfs", "datasets-s3-csi"}
    assert volumes["datasets-pvc"] == {
        "persistentVolumeClaim": {"claimName": "octotrain-datasets", "readOnly": True}
    }


def test_each_mount_is_its_prefix_of_the_volume_read_only() -> None:
    volume, mounts = kubernetes_mounts(
        "datasets-nfs",
        [
            ("house-prices_v1", "datasets/demo/house-prices/v1"),
            ("many_v2", "datasets/demo/many/v2"),
        ],
        "/octotrain/mounts/",
    )
    assert volume == {
        "name": VOLUME_NAME,
        "nfs": {"server": "nfs.example.com", "path": "/exports/octotrain", "readOnly": True},
    }
    assert mounts[0] == {
        "name": VOLUME_NAME,
        "mountPath": "/octotrain/mounts/house-prices_v1",
        "subPath": "datasets/demo/house-prices/v1",
        "readOnly": True,
    }
    with pytest.raises(KeyError, match="no mount volume 'nope'"):
        kubernetes_mounts("nope", [], "/m")


def test_a_spec_names_only_a_configured_volume_and_only_on_modelarts() -> None:
    base = {"name": "s", "cpu": 1, "memory_mib": 1024}
    spec = parse_document(
        ResourceSpecDocument, base | {"kind": "modelarts", "mount_volume": "datasets-pvc"}
    )
    assert spec.mount_volume == "datasets-pvc"
    with pytest.raises(InvalidInput, match=r"is not in config/mount_volumes\.toml"):
        parse_document(ResourceSpecDocument, base | {"kind": "modelarts", "mount_volume": "x"})
    with pytest.raises(InvalidInput, match="only for ModelArts-type specs"):
        parse_document(ResourceSpecDocument, base | {"mount_volume": "datasets-pvc"})
