"""Stopping a run on a user's request: its abort flag goes up, naming the user, where the
configured launcher's nodes look for it (the run folder, or the object store for pods). Every
node then stops within a few seconds (its process or its pod, with the grace period), nodes not
yet started do not start, ``collect_logs`` keeps every log and writes the supplemental logs
("stopped by <user>"), and the run ends ``stopped``."""

from __future__ import annotations

from hooks.launchers import configured_launcher
from octotrain.abort_flags import AbortFlag
from octotrain.catalog.models import Run
from octotrain.planning import run_key
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings


def request_stop(run: Run, *, by: str) -> AbortFlag:
    """Raise ``run``'s abort flag for ``by``; the flag that holds (an earlier one stays)."""
    layout = RunLayout(get_settings().runs_dir, run.task_id, run_key(run.airflow_run_id))
    marker = configured_launcher().abort_marker(layout)
    marker.raise_flag(AbortFlag.stopped_by(by))
    flag = marker.flag()
    assert flag is not None
    return flag
