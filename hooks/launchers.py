"""The configured launcher (``OCTOTRAIN_LAUNCHER``), picked here once: the one place in the
hooks that reads which launcher runs the nodes (``operators/launcher_stages.py`` picks the
stages that go with it, keyed the same)."""

from __future__ import annotations

from hooks.kubernetes.pod_launcher import PodLauncher
from hooks.local.local_launcher import LocalLauncher
from octotrain.catalog.models import Run
from octotrain.launcher import Launcher
from octotrain.planning import recorded_plan
from octotrain.run_files import RunFiles
from octotrain.run_layout import RunLayout
from octotrain.run_lifecycle import ACTIVE_RUN_STATES
from octotrain.settings import get_settings

LAUNCHERS: dict[str, type[LocalLauncher] | type[PodLauncher]] = {
    "local": LocalLauncher,
    "kubernetes": PodLauncher,
}


def configured_launcher() -> Launcher:
    return LAUNCHERS[get_settings().launcher]()


def files_of(run: Run) -> tuple[RunFiles, list[str]]:
    """A catalog run's files, where its launcher keeps them, and its nodes. A run that has no
    plan yet (``validate`` has not recorded it) has no nodes, hence no files."""
    plan = recorded_plan(run)
    layout = RunLayout(get_settings().runs_dir, run.task_id, plan.run_key if plan else "none")
    live = run.state in ACTIVE_RUN_STATES
    return configured_launcher().run_files(layout, live=live), plan.node_indices if plan else []
