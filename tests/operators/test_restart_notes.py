"""The run's note on a restart (``operators.restart_notes``): it replaces whatever note the run
showed (a hang notice, an earlier restart's note), never an ended run's reason, and a catalog
that cannot be reached does not stop the restart."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hooks.storage.catalog import CatalogHook
from octotrain.catalog.models import Run, RunState
from octotrain.planning import RunPlan
from octotrain.restarts import RunRestart
from octotrain.run_lifecycle import end_run, note_active_run
from octotrain.settings import get_settings
from octotrain.storage import ObjectStore
from operators.restart_notes import note_restart
from tests.operators.local.test_launch_local import plan as plan
from tests.operators.test_hang_notices import LOOKS_HUNG, message, running_run

LOG = logging.getLogger("launch")


def test_a_restart_s_note_replaces_the_run_s_note_but_never_its_end(
    octotrain_env: Path, catalog: CatalogHook, store: ObjectStore, plan: RunPlan
) -> None:
    run_id = running_run(catalog, store)
    planned = plan.model_copy(update={"catalog_run_id": run_id})
    with catalog.session() as session:
        assert note_active_run(session, run_id, note=LOOKS_HUNG)
    first = RunRestart(1, "distributed-1", "Evicted: the node was low on memory").in_words(2)
    note_restart(planned, first, log=LOG)
    assert message(catalog, run_id) == first
    second = RunRestart(2, "distributed-0", "NodeLost").in_words(2)
    note_restart(planned, second, log=LOG)
    assert message(catalog, run_id) == second
    assert second.startswith("node distributed-0 was lost (NodeLost): every node of the run")
    with catalog.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        end_run(session, run, state=RunState.FAILED, reason="node distributed-0 failed")
    note_restart(planned, first, log=LOG)
    assert message(catalog, run_id) == "node distributed-0 failed"


def test_a_catalog_that_cannot_be_reached_is_a_warning(  # nothing listens on port 9
    monkeypatch: pytest.MonkeyPatch, plan: RunPlan, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OCTOTRAIN_CATALOG_URL", "postgresql+psycopg2://nobody@127.0.0.1:9/none")
    get_settings.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="launch"):
            note_restart(plan.model_copy(update={"catalog_run_id": 7}), "restarted", log=LOG)
    finally:
        get_settings.cache_clear()
    assert "could not note the run's restart in the catalog" in caplog.text
