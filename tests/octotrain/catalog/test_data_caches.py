"""Data caches: requested, filled by the job (checked against the version's manifest),
expired but usable, refreshed beside the copy in use, failures recorded."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.data_caches import DataCaches, fill_cache, waiting_caches
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.errors import InvalidInput, StillReferenced
from octotrain.tasks import Tasks
from tests.factories import ADMIN, VALID_TASK, seed

WARM = {"name": "warm", "dataset": "many", "version": "v2", "ttl_hours": 1}


def test_a_cache_is_caching_until_the_job_fills_it(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    caches = DataCaches(rule_session, ADMIN, rule_store)
    cache = caches.create("demo", WARM)
    assert (cache.current_status(), cache.object_prefix, cache.file_count) == ("caching", "", 0)
    assert cache.id in waiting_caches(rule_session)
    with pytest.raises(InvalidInput, match="data cache 'warm' is caching"):
        Tasks(rule_session, ADMIN).check(VALID_TASK | {"data_inputs": [{"cache": "warm"}]})
    filled = fill_cache(rule_session, rule_store, cache.id)
    version = DatasetVersions(rule_session, ADMIN, rule_store).get("demo", "many", "v2")
    assert (filled.current_status(), filled.manifest) == ("cached", version.manifest)
    assert filled.content_digest == version.content_digest
    assert [info.key.rsplit("/", 1)[-1] for info in rule_store.list(filled.object_prefix)] == [
        "part-0.bin"
    ]
    assert cache.id not in waiting_caches(rule_session)
    Tasks(rule_session, ADMIN).check(VALID_TASK | {"data_inputs": [{"cache": "warm"}]})


def test_an_expired_cache_stays_usable_and_a_refresh_keeps_it_in_use(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    caches = DataCaches(rule_session, ADMIN, rule_store)
    stale = caches.get("demo", "stale")
    assert stale.current_status() == "expired"
    Tasks(rule_session, ADMIN).check(VALID_TASK | {"data_inputs": [{"cache": "stale"}]})
    in_use = stale.object_prefix
    refreshing = caches.refresh("demo", "stale", {"ttl_hours": 48})
    assert (refreshing.refresh_requested, refreshing.object_prefix) == (True, in_use)
    assert refreshing.current_status() == "expired"  # still usable while the job copies
    refreshed = fill_cache(rule_session, rule_store, stale.id)
    assert refreshed.current_status() == "cached" and refreshed.object_prefix != in_use
    assert refreshed.ttl_hours == 48 and not refreshed.refresh_requested


def test_a_failed_fill_is_recorded_and_leaves_nothing_behind(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    caches = DataCaches(rule_session, ADMIN, rule_store)
    cache = caches.create("demo", WARM)
    version = DatasetVersions(rule_session, ADMIN, rule_store).get("demo", "many", "v2")
    [only] = rule_store.list(version.object_prefix)
    (rule_store.root / only.key).unlink()  # the version's files are gone from the store
    failed = fill_cache(rule_session, rule_store, cache.id)
    assert failed.current_status() == "failed"
    assert "missing ['part-0.bin']" in failed.message
    assert rule_store.list("caches/demo/warm") == []
    assert caches.refresh("demo", "warm", {}).current_status() == "caching"  # try again


def test_cache_rules(rule_session: Session, rule_store: LocalFolderStore) -> None:
    caches = DataCaches(rule_session, ADMIN, rule_store)
    with pytest.raises(InvalidInput) as caught:
        caches.create(
            "demo", {"name": "hot", "dataset": "pending", "version": "v2", "ttl_hours": 0}
        )
    assert {p.field for p in caught.value.problems} == {"name", "version", "ttl_hours"}
    with pytest.raises(InvalidInput, match="does not exist"):
        caches.create("demo", {"name": "c2", "dataset": "nope", "version": "v1"})
    with pytest.raises(InvalidInput, match="ttl_hours"):
        caches.refresh("demo", "hot", {"ttl_hours": 10**6})
    Tasks(rule_session, ADMIN).create(VALID_TASK | {"data_inputs": [{"cache": "hot"}]})
    with pytest.raises(StillReferenced, match="task 'rule-check'"):
        caches.delete("demo", "hot")


def test_a_refilled_cache_drops_its_old_copy_once_committed(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    seed(catalog, store)
    with catalog.session() as session:
        cache = DataCaches(session, ADMIN, store).create(
            "demo", {"name": "c", "dataset": "house-prices", "version": "v1"}
        )
        old = fill_cache(session, store, cache.id).object_prefix
    with catalog.session() as session:
        DataCaches(session, ADMIN, store).refresh("demo", "c", {})
        new = fill_cache(session, store, cache.id).object_prefix
        assert store.list(old)  # the copy in use until the commit
    assert store.list(old) == [] and store.list(new)
    with catalog.session() as session:
        DataCaches(session, ADMIN, store).delete("demo", "c")
    assert store.list("caches") == []
