"""What a launch task says while its node looks hung (``operators.hang_notices``): one warning
in its log, the run's note in the catalog (the run view's Note) while it lasts, withdrawn when
the training advances again; a pod's hang report is read from the store."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hooks.storage.catalog import CatalogHook
from hooks.storage.object_store import default_object_store
from octotrain.catalog.models import Run, RunState
from octotrain.hang_detection import HungNode
from octotrain.run_layout import RunObjects
from octotrain.storage import ObjectStore
from operators.hang_notices import HangNotices, pod_hang_notices
from tests.factories import seed
from tests.stored_run_files import store_text

NODE = "distributed-1"
LOOKS_HUNG = (
    f"node {NODE} looks hung: its log and metrics did not advance for 61 s while its process "
    "was alive (hang_detection.after_seconds: 60)"
)


def running_run(catalog: CatalogHook, store: ObjectStore) -> int:
    demo = seed(catalog, store)
    with catalog.session() as session:
        run = Run(task_id=demo.task_id, airflow_run_id="manual__r", state=RunState.RUNNING,
                  node_count=2)  # fmt: skip
        session.add(run)
        session.flush()
        return run.id


def message(catalog: CatalogHook, run_id: int) -> str:
    with catalog.session() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run.message


def test_a_hang_is_said_once_and_noted_on_the_run_until_the_training_advances(
    octotrain_env: Path,
    catalog: CatalogHook,
    store: ObjectStore,
    caplog: pytest.LogCaptureFixture,
) -> None:
    run_id = running_run(catalog, store)
    reports: list[HungNode | None] = [None, HungNode(61, 60), HungNode(65, 60), None]
    notices = HangNotices(node_index=NODE, catalog_run_id=run_id, read=lambda: reports.pop(0),
                          log=logging.getLogger("launch"))  # fmt: skip
    with caplog.at_level(logging.INFO, logger="launch"):
        notices()
        assert message(catalog, run_id) == ""
        notices()
        assert message(catalog, run_id) == LOOKS_HUNG
        notices()  # still hung: said once
        assert message(catalog, run_id) == LOOKS_HUNG
        notices()
        assert message(catalog, run_id) == ""
    assert [record.getMessage() for record in caplog.records] == [
        LOOKS_HUNG,
        f"node {NODE} advances again: no longer hung",
    ]


def test_a_store_that_cannot_be_read_is_looked_at_again_next_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def unreachable() -> HungNode | None:
        raise ConnectionError("the store is away")

    notices = HangNotices(node_index=NODE, catalog_run_id=0, read=unreachable,
                          log=logging.getLogger("launch"))  # fmt: skip
    with caplog.at_level(logging.INFO, logger="launch"):
        notices()
    assert caplog.messages == [f"could not read node {NODE}'s hang report: the store is away"]
    assert notices.note is None


def test_a_pod_s_hang_report_is_read_where_its_sidecar_keeps_it(octotrain_env: Path) -> None:
    prefix = "runs/7/manual__x"
    notices = pod_hang_notices(run_prefix=prefix, node_index=NODE, catalog_run_id=0,
                               log=logging.getLogger("launch"))  # fmt: skip
    assert notices.read() is None
    key = RunObjects.from_prefix(prefix).hang_report(NODE)
    store_text(
        default_object_store(), key, json.dumps({"silent_seconds": 61, "hang_after_seconds": 60})
    )
    assert notices.read() == HungNode(61, 60)
    store_text(default_object_store(), key, "{}")  # emptied: the training advances again
    assert notices.read() is None
