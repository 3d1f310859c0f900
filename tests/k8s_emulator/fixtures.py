"""The ``k8s_emulator`` pytest fixture: ``from tests.k8s_emulator.fixtures import
k8s_emulator`` in a test module (or a conftest) makes it available there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.k8s_emulator.emulator import KubernetesEmulator


@pytest.fixture
def k8s_emulator(tmp_path: Path) -> Iterator[KubernetesEmulator]:
    """A started emulator (a 16-cpu, 64Gi node without GPUs) whose files are under the
    test's ``tmp_path``; stopped, with every container process killed, after the test."""
    emulator = KubernetesEmulator(root=tmp_path / "k8s-emulator")
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()
