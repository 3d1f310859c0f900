"""The configured launcher (``OCTOTRAIN_LAUNCHER``), picked here once: the one place that
reads which launcher runs the nodes (the DAG factory picks the stages that go with it)."""

from __future__ import annotations

from hooks.local_launcher import LocalLauncher
from hooks.pod_launcher import PodLauncher
from octotrain.launcher import Launcher
from octotrain.settings import get_settings

LAUNCHERS: dict[str, type[LocalLauncher] | type[PodLauncher]] = {
    "local": LocalLauncher,
    "kubernetes": PodLauncher,
}


def configured_launcher() -> Launcher:
    return LAUNCHERS[get_settings().launcher]()
