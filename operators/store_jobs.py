"""The object-store jobs: ``fill_data_caches`` copies every data cache that is ``caching``
(new) or asked to refresh from its dataset version, checked against the version's manifest,
recording how each ended on the cache and in the task's log; ``sweep_orphan_objects`` removes
what failed writes left behind."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import BaseOperator, Context

from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.data_caches import fill_waiting_caches
from octotrain.catalog.orphans import orphan_prefixes


class FillDataCachesOperator(BaseOperator):
    ui_color = "#eef7ea"

    def execute(self, context: Context) -> list[dict[str, Any]]:
        done = fill_waiting_caches(default_catalog().session, default_object_store())
        for cache in done:
            if cache.message:
                self.log.warning("data cache %s/%s: %s", cache.project, cache.name, cache.message)
            else:
                self.log.info(
                    "data cache %s/%s: %s (%d files, %d bytes)",
                    cache.project, cache.name, cache.status, cache.file_count, cache.size_bytes,
                )  # fmt: skip
        return [cache.model_dump(mode="json") for cache in done]


class SweepOrphanObjectsOperator(BaseOperator):
    """Remove objects no catalog row points to, older than ``grace`` (see
    ``octotrain.catalog.orphans``)."""

    ui_color = "#f3eefa"

    def __init__(self, *, grace: timedelta, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.grace = grace

    def execute(self, context: Context) -> list[str]:
        store = default_object_store()
        with default_catalog().session() as session:
            orphans = orphan_prefixes(session, store, older_than=self.grace)
        for prefix in orphans:
            removed = store.delete_prefix(prefix)
            self.log.info("removed %d orphan objects under %s", removed, prefix)
        return orphans
