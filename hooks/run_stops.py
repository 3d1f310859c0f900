"""Stopping a run on a user's request: its abort flag goes up, naming the user, where the
configured launcher's nodes look for it (the run folder, or the object store for pods). Every
node then stops within a few seconds (its process or its pod, with the grace period), nodes not
yet started do not start, ``collect_logs`` keeps every log and writes the supplemental logs
("stopped by <user>"), and the run ends ``stopped``.

In Airflow the stopped nodes' launch tasks end skipped, not failed, so the DAG run is not
counted as a failure; what says it was stopped there is the note the caller puts on it
(``RunStop.note``): the plugin in-process (``hooks.dag_runs.add_run_note``), the command line
through Airflow's REST API.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from hooks.launchers import configured_launcher
from octotrain.abort_flags import AbortFlag, stop_note
from octotrain.catalog.models import Run
from octotrain.planning import run_key
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings


@dataclass(frozen=True)
class RunStop:
    """A stop request: the flag that holds (an earlier one stays: another user's stop, or a
    node's failure), and the note for the run's DAG run in Airflow when this request's stop
    is the one that holds (None otherwise: the run was not stopped by this request)."""

    flag: AbortFlag
    note: str | None


def request_stop(run: Run, *, by: str) -> RunStop:
    """Raise ``run``'s abort flag for ``by``."""
    layout = RunLayout(get_settings().runs_dir, run.task_id, run_key(run.airflow_run_id))
    marker = configured_launcher().abort_marker(layout)
    earlier = marker.flag()
    requested = AbortFlag.stopped_by(by)
    marker.raise_flag(requested)
    flag = marker.flag()
    assert flag is not None
    holds = earlier is None and flag == requested
    return RunStop(flag, stop_note(user=by, at=datetime.now(UTC)) if holds else None)
