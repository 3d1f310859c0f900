"""The configured launcher (``OCTOTRAIN_LAUNCHER``), picked here once: the one place in the
hooks that reads which launcher runs the nodes (``dags/launcher_stages.py`` picks the stages
that go with it, keyed the same); and a catalog run's files, logs, metrics and progress where
that launcher keeps them. Above the launchers' rooms and ``hooks/runs/``, which never import
it."""

from __future__ import annotations

from hooks.kubernetes.pod_launcher import PodLauncher
from hooks.local.local_launcher import LocalLauncher
from hooks.runs.run_logs import RunLogs
from hooks.runs.run_metrics import RunMetrics
from hooks.runs.run_progress import RunPhases
from hooks.storage.object_store import default_object_store
from octotrain.catalog.models import Run
from octotrain.launcher import Launcher
from octotrain.node_progress import RunProgress
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


def run_logs_of(run: Run) -> RunLogs:
    """The logs of a catalog run, where its launcher keeps its files."""
    return RunLogs(*files_of(run))


def metrics_of(run: Run) -> RunMetrics:
    """The metrics of a catalog run, where its launcher keeps its files (the charts' indexes
    in the object store)."""
    files, nodes = files_of(run)
    return RunMetrics(files, default_object_store(), nodes)


def progress_of(run: Run, *, now: float) -> RunProgress:
    """A catalog run's progress, where its launcher keeps its files."""
    files, nodes = files_of(run)
    return RunPhases(files, nodes).progress(run_active=run.state in ACTIVE_RUN_STATES, now=now)
