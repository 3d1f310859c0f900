"""Data caches: pre-staged copies of a dataset version, with an expiry.

Creating a cache (or asking for a refresh) records the request; the data-cache job
(``dags/store_jobs.py``, or ``octotrain cache fill``) does the copying, which may take long for
large datasets. A cache is ``caching`` until its first copy is complete, then ``cached`` until
it expires and ``expired`` after; both may be used as a data input (the manual). A failed first
copy makes it ``failed``, with the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta

from sqlalchemy import Select, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from octotrain.catalog.access import Scope
from octotrain.catalog.documents import CacheRefreshDocument, DataCacheDocument
from octotrain.catalog.models import CacheStatus, DataCache, Dataset, DatasetVersion, utcnow
from octotrain.catalog.paging import Page, Window, paged
from octotrain.catalog.references import References
from octotrain.catalog.transactions import on_commit, on_rollback
from octotrain.catalog.views import DataCacheView
from octotrain.documents import judge_document, parse_document
from octotrain.errors import Conflict, FieldProblem, NotFound, StillReferenced
from octotrain.manifests import Manifest
from octotrain.storage import ObjectStore, ObjectStoreError
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
        return list(self.session.scalars(self._listed(project)))

    def page(self, project: str, window: Window) -> Page[DataCache]:
        return paged(self.session, self._listed(project), window)

    def _listed(self, project: str) -> Select[tuple[DataCache]]:
        found = self.scope.project(self.session, project)
        return select(DataCache).where(DataCache.project_id == found.id).order_by(DataCache.name)

    def get(self, project: str, name: str) -> DataCache:
        found = self.scope.project(self.session, project)
        cache = self.session.scalars(
            select(DataCache).where(DataCache.project_id == found.id, DataCache.name == name)
        ).one_or_none()
        if cache is None:
            raise NotFound(f"data cache '{name}' not found in project '{project}'")
        return cache

    def create(self, project: str, document: object) -> DataCache:
        """Record a new cache of a dataset version, ``caching`` until the job has filled it."""
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
        cache = DataCache(
            project_id=found.id,
            name=parsed.name,
            dataset_version_id=sources["version"].id,
            status=CacheStatus.CACHING,
            object_prefix="",
            ttl_hours=parsed.ttl_hours,
        )
        self.session.add(cache)
        try:
            self.session.flush()
        except IntegrityError:
            raise Conflict(
                f"data cache '{parsed.name}' was created by another request at the same time"
            ) from None
        return cache

    def refresh(self, project: str, name: str, document: object) -> DataCache:
        """Ask the data-cache job to copy the dataset version again (with the document's
        ``ttl_hours``, or the cache's own). The copy in use stays usable meanwhile; a cache
        whose fill failed is filled anew."""
        cache = self.get(project, name)
        parsed = parse_document(CacheRefreshDocument, document)
        if parsed.ttl_hours is not None:
            cache.ttl_hours = parsed.ttl_hours
        if cache.status == CacheStatus.FAILED:
            cache.status = CacheStatus.CACHING
        else:
            cache.refresh_requested = True
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
        if prefix:
            on_commit(self.session, lambda: self.store.delete_prefix(prefix))


def waiting_caches(session: Session) -> list[int]:
    """The ids of the caches the data-cache job has to fill: new, or asked to refresh."""
    return list(
        session.scalars(
            select(DataCache.id)
            .where((DataCache.status == CacheStatus.CACHING) | DataCache.refresh_requested)
            .order_by(DataCache.id)
        )
    )


def fill_cache(session: Session, store: ObjectStore, cache_id: int) -> DataCache:
    """The data-cache job's step for one cache: copy its dataset version into a fresh prefix,
    check every file against the version's manifest, then switch the cache to the copy.

    A failure leaves the copy in use (if any) untouched, removes the partial one, and is
    recorded on the cache (``failed`` if it had no copy yet); it is not raised, so that the
    job goes on with the other caches.
    """
    cache = session.get(DataCache, cache_id)
    if cache is None:
        raise NotFound(f"data cache {cache_id} not found")
    source = cache.dataset_version
    fresh = cache_prefix(cache.project.name, cache.name)
    try:
        store.copy_prefix(source.object_prefix, fresh)
        _check_copy(store, fresh, source.manifest)
    except (ObjectStoreError, ValueError) as error:
        store.delete_prefix(fresh)
        cache.message = f"copying dataset version {source.version} failed: {error}"
        cache.refresh_requested = False
        if not cache.object_prefix:
            cache.status = CacheStatus.FAILED
        session.flush()
        return cache
    previous = cache.object_prefix
    on_rollback(session, lambda: store.delete_prefix(fresh))
    if previous:
        on_commit(session, lambda: store.delete_prefix(previous))
    cache.object_prefix = fresh
    cache.record(source.manifest or _listed_manifest(store, fresh))
    cache.status = CacheStatus.CACHED
    cache.expires_at = utcnow() + timedelta(hours=cache.ttl_hours)
    cache.refresh_requested = False
    cache.message = ""
    session.flush()
    return cache


def _check_copy(store: ObjectStore, prefix: str, manifest: Manifest) -> None:
    """Every file of ``manifest`` is in the copy with its size (the copy was made inside the
    store, which checks the bytes it moves; sizes catch a copy cut short)."""
    if not manifest:
        return
    copied = {info.key[len(prefix) + 1 :]: info.size for info in store.list(prefix)}
    expected = {path: int(entry["size"]) for path, entry in manifest.items()}
    if copied != expected:
        missing = sorted(set(expected) - set(copied))
        wrong = sorted(p for p in expected.keys() & copied.keys() if expected[p] != copied[p])
        raise ValueError(f"the copy differs from the version: missing {missing}, sizes {wrong}")


def _listed_manifest(store: ObjectStore, prefix: str) -> Manifest:
    """For versions imported before manifests were recorded: sizes only, no checksums."""
    return {
        info.key[len(prefix) + 1 :]: {"size": info.size, "blake3": ""}
        for info in store.list(prefix)
    }


def fill_waiting_caches(
    sessions: Callable[[], AbstractContextManager[Session]], store: ObjectStore
) -> list[DataCacheView]:
    """The data-cache job: fill every waiting cache, each in a transaction of its own (one
    cache's failure, recorded on it, does not undo the others); return how each ended."""
    with sessions() as session:
        waiting = waiting_caches(session)
    done = []
    for cache_id in waiting:
        with sessions() as session:
            done.append(DataCacheView.of(fill_cache(session, store, cache_id)))
    return done
