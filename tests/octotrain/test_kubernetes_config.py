"""``config/kubernetes.toml``: the shipped file is valid, a wrong one is refused by field, and
priorities map to the classes it names."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from octotrain.kubernetes_config import kubernetes_config
from octotrain.settings import REPO_ROOT


def test_the_shipped_file_is_valid_and_maps_priorities() -> None:
    config = kubernetes_config(REPO_ROOT / "config" / "kubernetes.toml")
    assert config.priority_class(50) == "octotrain-high"
    assert config.priority_class(0) == "octotrain-normal"
    assert config.priority_class(-50) == "octotrain-low"
    assert config.scheduling("modelarts-gpu").node_local_path == "/mnt/nvme/octotrain"
    assert config.scheduling("not-listed").node_selector == {}
    assert config.deferrable  # launch tasks hold no worker slot while their pods train
    assert config.pod_security == "restricted"
    assert [port.port for rule in config.egress for port in rule.ports] == [443]


def test_launch_tasks_defer_unless_the_file_says_otherwise(tmp_path: Path) -> None:
    silent, synchronous = tmp_path / "silent.toml", tmp_path / "synchronous.toml"
    silent.write_text("master_port = 29500\n")
    synchronous.write_text("deferrable = false\n")
    assert kubernetes_config(silent).deferrable
    assert not kubernetes_config(synchronous).deferrable


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("master_port = 80", "master_port"),
        ("sync_interval_seconds = 0", "sync_interval_seconds"),
        ("colour = 'blue'", "colour"),
        ("deferrable = 'sometimes'", "deferrable"),
        ("[[priority_classes]]\nminimum = 99\nname = 'x'", "priority_classes.0.minimum"),
        ("pod_security = 'privileged'", "pod_security"),
        ("[[egress]]\ncidrs = ['10.0.0.1/8']", "egress.0.cidrs.0"),
        ("[[egress]]\nports = [{ port = 0 }]", "egress.0.ports.0.port"),
        ("[[egress]]\nports = [{ port = 53, protocol = 'ICMP' }]", "egress.0.ports.0.protocol"),
        ("[[egress]]\nexcept_cidrs = ['10.0.0.0/8']", "egress.0"),
    ],
)
def test_a_wrong_file_is_refused_naming_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "kubernetes.toml"
    path.write_text(text + "\n")
    with pytest.raises(ValidationError, match=field.replace(".", r"\.")):
        kubernetes_config(path)
