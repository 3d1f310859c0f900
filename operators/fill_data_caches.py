"""``fill_data_caches``: the data-cache job. Every data cache that is ``caching`` (new) or
asked to refresh is copied from its dataset version and checked against the version's
manifest; how each ended is recorded on the cache and in this task's log."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator, Context

from hooks.catalog import default_catalog
from hooks.object_store import default_object_store
from octotrain.catalog.data_caches import fill_waiting_caches


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
