"""Data caches: pre-staged copies of a dataset version, with an expiry.

A cache is ``cached`` until it expires and ``expired`` after; both may be used as a data input
(the manual). Refreshing copies the dataset version again and restarts the expiry.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from octotrain.catalog.access import Scope
from octotrain.catalog.documents import DEFAULT_TTL_HOURS, CacheRefreshDocument, DataCacheDocument
from octotrain.catalog.models import (
    CacheStatus,
    DataCache,
    Dataset,
    DatasetVersion,
    as_utc,
    utcnow,
)
from octotrain.catalog.references import References
from octotrain.catalog.transactions import on_commit
from octotrain.catalog.uploads import add_with_objects, fill_claimed_prefix
from octotrain.documents import judge_document, parse_document
from octotrain.errors import FieldProblem, NotFound, StillReferenced
from octotrain.storage import ObjectStore
from octotrain.task_rules import USABLE_VERSION_STATUSES


def cache_prefix(project: str, cache: str) -> str:
    """A fresh prefix for one fill of a cache: a refresh writes beside the copy in use and
    switches to it only once complete."""
    return f"caches/{project}/{cache}/{uuid.uuid4().hex[:12]}"


class DataCaches:
    def __init__(self, session: Session, scope: Scope, store: ObjectStore) -> None:
        self.session = session
        self.scope = scope
        self.store = store

    def list(self, project: str) -> list[DataCache]:
        found = self.scope.project(self.session, project)
        return list(
            self.session.scalars(
                select(DataCache).where(DataCache.project_id == found.id).order_by(DataCache.name)
            )
        )

    def get(self, project: str, name: str) -> DataCache:
        found = self.scope.project(self.session, project)
        cache = self.session.scalars(
            select(DataCache).where(DataCache.project_id == found.id, DataCache.name == name)
        ).one_or_none()
        if cache is None:
            raise NotFound(f"data cache '{name}' not found in project '{project}'")
        return cache

    def create(self, project: str, document: object) -> DataCache:
        """Copy the dataset version into a new cache (a failed copy leaves no cache)."""
        found = self.scope.project(self.session, project)
        sources: dict[str, DatasetVersion] = {}

        def rules(fields: dict[str, object]) -> list[FieldProblem]:
            problems = []
            name = fields.get("name")
            if name is not None and self.session.scalar(
                select(DataCache.id).where(DataCache.project_id == found.id, DataCache.name == name)
            ):
                problems.append(
                    FieldProblem(
                        "name", f"data cache '{name}' already exists in project '{project}'"
                    )
                )
            dataset, version = fields.get("dataset"), fields.get("version")
            if dataset is None or version is None:
                return problems
            source = self.session.scalars(
                select(DatasetVersion)
                .join(Dataset)
                .where(
                    Dataset.project_id == found.id,
                    Dataset.name == dataset,
                    DatasetVersion.version == version,
                )
            ).one_or_none()
            if source is None:
                problems.append(
                    FieldProblem("version", f"dataset version '{dataset}' {version} does not exist")
                )
            elif source.status not in USABLE_VERSION_STATUSES:
                problems.append(
                    FieldProblem(
                        "version",
                        f"dataset version '{dataset}' {version} is {source.status}; only a "
                        "published or imported version can be cached",
                    )
                )
            else:
                sources["version"] = source
            return problems

        parsed = judge_document(DataCacheDocument, document, rules)
        source = sources["version"]
        cache = DataCache(
            project_id=found.id,
            name=parsed.name,
            dataset_version_id=source.id,
            status=CacheStatus.CACHED,
            object_prefix=cache_prefix(project, parsed.name),
            expires_at=utcnow() + timedelta(hours=parsed.ttl_hours),
        )
        add_with_objects(
            self.session,
            self.store,
            cache,
            lambda prefix: self.store.copy_prefix(source.object_prefix, prefix),
            taken=f"data cache '{parsed.name}' was created by another request at the same time",
        )
        return cache

    def refresh(self, project: str, name: str, document: object) -> DataCache:
        """Copy the dataset version again and restart the expiry (of the document's
        ``ttl_hours``, or of the cache's previous lifetime)."""
        cache = self.get(project, name)
        parsed = parse_document(CacheRefreshDocument, document)
        if parsed.ttl_hours is not None:
            lifetime = timedelta(hours=parsed.ttl_hours)
        elif cache.expires_at is not None:
            lifetime = as_utc(cache.expires_at) - as_utc(cache.created_at)
        else:
            lifetime = timedelta(hours=DEFAULT_TTL_HOURS)
        previous = cache.object_prefix
        cache.object_prefix = cache_prefix(project, name)
        self._copy(cache, cache.dataset_version)
        on_commit(self.session, lambda: self.store.delete_prefix(previous))
        cache.status = CacheStatus.CACHED
        cache.expires_at = utcnow() + lifetime
        self.session.flush()
        return cache

    def delete(self, project: str, name: str) -> None:
        cache = self.get(project, name)
        referrers = References(self.session, cache.project).to_cache(name)
        if referrers:
            raise StillReferenced(f"data cache '{name}' cannot be deleted: it", referrers)
        prefix = cache.object_prefix
        self.session.delete(cache)
        self.session.flush()
        on_commit(self.session, lambda: self.store.delete_prefix(prefix))

    def _copy(self, cache: DataCache, source: DatasetVersion) -> None:
        written = fill_claimed_prefix(
            self.session,
            self.store,
            cache.object_prefix,
            lambda: self.store.copy_prefix(source.object_prefix, cache.object_prefix),
        )
        cache.size_bytes, cache.file_count = written.size_bytes, written.file_count
        self.session.flush()
