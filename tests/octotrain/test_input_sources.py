"""Staging reads each input's current place from the catalog: a deleted one is named, a
refreshed cache is read from its new copy, an expired one is asked to refresh."""

from __future__ import annotations

from sqlalchemy.orm import Session

from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.data_caches import DataCaches, fill_cache
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.input_sources import current_sources
from octotrain.tasks import Tasks
from tests.factories import ADMIN, VALID_TASK


def test_sources_follow_the_catalog_as_it_is_now(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    inputs = [{"dataset": "many", "version": "v1"}, {"cache": "hot"}, {"cache": "stale"}]
    resolved = Tasks(rule_session, ADMIN).check(VALID_TASK | {"data_inputs": inputs})
    caches = DataCaches(rule_session, ADMIN, rule_store)
    caches.refresh("demo", "hot", {})
    fill_cache(rule_session, rule_store, caches.get("demo", "hot").id)  # moved to a new copy
    DatasetVersions(rule_session, ADMIN, rule_store).delete("demo", "many", "v1")
    sources, problems = current_sources(rule_session, resolved.data_inputs)
    assert problems == [
        "dataset many_v1 was deleted after this run was validated; nothing was staged"
    ]
    hot, stale = sources
    assert hot.object_prefix == caches.get("demo", "hot").object_prefix
    assert hot.digest and hot.manifest
    assert stale.name == "stale" and caches.get("demo", "stale").refresh_requested
