"""Objects no catalog row points to: what a request or a run left when it died between
writing its files and committing (or cleaning up after) its row, e.g. because the store went
down. A sweep removes them once they are older than a grace period, so that uploads still in
progress (their rows not yet committed) are never touched."""

from __future__ import annotations

import time
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from octotrain.catalog.models import AlgorithmCode, DataCache, DatasetVersion, ModelVersion
from octotrain.storage import ObjectStore

# Top-level folders holding the files of catalog rows (runs/ holds run logs, kept apart).
STORED_FOLDERS = ("datasets", "caches", "models", "algorithms")


def version_prefix_of(key: str) -> str:
    """The prefix of the version (or cache fill) an object belongs to, by the store's layout:
    ``datasets/<p>/<d>/<v>``, ``caches/<p>/<c>/<fill>``, ``models/<p>/<r>/<n>`` or
    ``models/<p>/<r>/runs/<task>-<run key>``, or an algorithm's code version,
    ``algorithms/<project id>/<algorithm id>/code/v<n>``."""
    parts = key.split("/")
    runs = parts[0] == "models" and len(parts) > 4 and parts[3] == "runs"
    depth = 5 if runs or parts[0] == "algorithms" else 4
    return "/".join(parts[:depth])


def orphan_prefixes(
    session: Session, store: ObjectStore, *, older_than: timedelta, now: float | None = None
) -> list[str]:
    """Version prefixes whose objects are all older than ``older_than`` and that no dataset
    version, data cache, model version or algorithm code version points to."""
    referenced = set()
    for model in (DatasetVersion, DataCache, ModelVersion, AlgorithmCode):
        referenced.update(prefix for prefix in session.scalars(select(model.object_prefix)))
    cutoff = (now or time.time()) - older_than.total_seconds()
    newest: dict[str, float] = {}
    for folder in STORED_FOLDERS:
        for info in store.list(folder):
            prefix = version_prefix_of(info.key)
            newest[prefix] = max(newest.get(prefix, 0.0), info.modified)
    return sorted(
        prefix
        for prefix, modified in newest.items()
        if prefix not in referenced and modified < cutoff
    )
