"""Recording the manifests of files stored before manifests were kept (catalogs migrated from
an earlier version): each file is read once through the store, which computes its checksum.
Staging refuses inputs without a manifest, so ``octotrain init`` (and ``octotrain up``) run
this after migrating."""

from __future__ import annotations

import tempfile
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from octotrain.catalog.models import DataCache, DatasetVersion, ModelVersion
from octotrain.manifests import manifest_of
from octotrain.storage import ObjectStore


def backfill_manifests(session: Session, store: ObjectStore) -> list[str]:
    """Record the manifest of every stored version without one; return their prefixes."""
    done = []
    for model in (DatasetVersion, ModelVersion, DataCache):
        rows = session.scalars(
            select(model).where(model.content_digest == "", model.object_prefix != "")
        )
        for row in rows:
            with tempfile.TemporaryDirectory(prefix="octotrain-backfill-") as scratch:
                read = [
                    store.get_file(info.key, Path(scratch) / "object")
                    for info in store.list(row.object_prefix)
                ]
            if read:
                row.record(manifest_of(read, row.object_prefix))
                done.append(row.object_prefix)
    session.flush()
    return done
