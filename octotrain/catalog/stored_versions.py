"""Immutable versions of a named catalog object (a dataset's versions, a model repository's, an
algorithm's code), each one's files written once under a prefix of its own in the object store,
with their manifest (``StoredFiles``).

Finding, listing, paging, storing and deleting a version is done one way here, so that each
service keeps only what is its own: its table, its prefix and its rules (a dataset version is
named and published, a model version records its lineage, code is bounded in size).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import InstrumentedAttribute, Load, Session

from octotrain.catalog.access import Scope
from octotrain.catalog.models import StoredFiles
from octotrain.catalog.named_objects import Algorithms, Datasets, ModelRepositories
from octotrain.catalog.paging import Page, Window, paged
from octotrain.catalog.transactions import on_commit
from octotrain.catalog.uploads import add_with_objects, check_files, upload_files
from octotrain.errors import NotFound, StillReferenced
from octotrain.storage import ObjectStore

# The named object the versions are of (an algorithm, a dataset, a model repository), and
# the version's row.
OwnerT = TypeVar("OwnerT")
VersionT = TypeVar("VersionT", bound=StoredFiles)


def next_number(session: Session, owner_key: InstrumentedAttribute[int], owner_id: int) -> int:
    """The number after the newest version of the owner ``owner_id`` (1 for its first), for
    versions numbered 1, 2, … per owner: two requests that race for it both read it, and the
    unique (owner, version) constraint makes the second one's claim a conflict."""
    newest = session.scalar(select(func.max(owner_key.class_.version)).where(owner_key == owner_id))
    return 1 + (newest or 0)


class StoredVersions(Generic[OwnerT, VersionT]):
    """The versions of one kind of owner, for the user of ``scope``."""

    owner_service: ClassVar[type[Algorithms | Datasets | ModelRepositories]]
    # NotFound's message, of ``{owner}`` and ``{version}``.
    missing: ClassVar[str]

    def __init__(self, session: Session, scope: Scope, store: ObjectStore) -> None:
        self.session = session
        self.scope = scope
        self.store = store
        self.owners = self.owner_service(session, scope, store)

    def list(self, project: str, owner: str) -> list[VersionT]:
        return list(self.owners.versions_of(self.owners.get(project, owner)))

    def get(self, project: str, owner: str, version: int | str) -> VersionT:
        row = self._find(self.owners.get(project, owner), version)
        if row is None:
            raise NotFound(self.missing.format(owner=owner, version=version))
        return row

    def _find(self, owner: OwnerT, version: int | str) -> VersionT | None:
        versions = self.owners.versions_of(owner)
        return next((row for row in versions if row.version == version), None)

    def _check(self, row: VersionT, files: Mapping[str, Path], *, field: str) -> None:
        """Refuse ``files`` before anything is written: each path, and its object key under
        the version's prefix within the store's limit."""
        check_files(
            files, prefix=row.object_prefix, max_key_bytes=self.store.max_key_bytes, field=field
        )

    def _store(
        self, row: VersionT, files: Mapping[str, Path], *, taken: str, field: str = "files"
    ) -> VersionT:
        """Add ``row`` with ``files`` (relative path → local file) uploaded under its prefix,
        both or neither; ``taken``: the message when another request claimed its name first,
        ``field``: the input a refused path came from."""
        self._check(row, files, field=field)
        add_with_objects(
            self.session,
            self.store,
            row,
            lambda prefix: upload_files(self.store, files, prefix),
            taken=taken,
        )
        return row


class DeletableVersions(StoredVersions[OwnerT, VersionT]):
    """Versions a user pages through and deletes once nothing refers to them (dataset and
    model versions; code versions go only with their algorithm, since saved tasks run them)."""

    # The version table's column naming its owner, the order of ``list`` (the owner's
    # relationship), and what a version's view reads.
    owner_key: ClassVar[InstrumentedAttribute[int]]
    page_order: ClassVar[InstrumentedAttribute[Any]]
    page_loads: ClassVar[tuple[Load, ...]]
    # StillReferenced's message, of ``{owner}`` and ``{version}``.
    undeletable: ClassVar[str]

    def page(self, project: str, owner: str, window: Window) -> Page[VersionT]:
        """One page of an owner's versions, in ``list``'s order, with what their views read
        loaded for the whole page at once (not a query a row)."""
        found = self.owners.get(project, owner)
        kind = type(self)  # the columns through the class: through self they read a row
        query = (
            select(kind.owner_key.class_)
            .where(kind.owner_key == found.id)
            .order_by(kind.page_order)
            .options(*self.page_loads)
        )
        return paged(self.session, query, window)

    def delete(self, project: str, owner: str, version: int | str) -> None:
        """Delete a version, and its files once the deletion is committed."""
        row = self.get(project, owner, version)
        referrers = self._referrers(row)
        if referrers:
            raise StillReferenced(self.undeletable.format(owner=owner, version=version), referrers)
        prefix = row.object_prefix
        self.session.delete(row)
        self.session.flush()
        on_commit(self.session, lambda: self.store.delete_prefix(prefix))

    def _referrers(self, row: VersionT) -> list[str]:
        """What still refers to ``row`` (tasks, data caches, model versions), by name."""
        raise NotImplementedError
