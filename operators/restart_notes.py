"""The run's note on its restarts (``octotrain.restarts``), which the run view shows while the
run is active: which node was lost, why, and that every node was started again from its
checkpoint. A note is no part of the training: a catalog that cannot be reached is logged as a
warning, and the restart goes on."""

from __future__ import annotations

import logging

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import Run
from octotrain.planning import RunPlan
from octotrain.run_lifecycle import note_active_run


def note_restart(plan: RunPlan, note: str, *, log: logging.Logger) -> None:
    """Show ``note`` as the run's note, in place of any earlier (a restart says more than a
    hang notice or an earlier restart's note); nothing for a run outside the catalog."""
    if not plan.catalog_run_id:
        return
    try:
        with default_catalog().session() as session:
            run = session.get(Run, plan.catalog_run_id)
            if run is not None:
                note_active_run(session, run.id, note=note, replacing=run.message or "")
    except Exception as error:
        log.warning("could not note the run's restart in the catalog: %s", error)
