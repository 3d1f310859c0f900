"""Model versions: listed, shown with their lineage, imported from files, deleted.

Training archives new versions (``operators/archive_model``); a user may also import one, since
incremental training starts from "a model the user imported". Both number versions 1, 2, …
per repository, so an import and an archive that race for a number cannot both have it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from octotrain.catalog.access import Scope
from octotrain.catalog.documents import ModelImportDocument
from octotrain.catalog.models import (
    ModelRepository,
    ModelVersion,
    ModelVersionSource,
    ModelVersionStatus,
)
from octotrain.catalog.named_objects import ModelRepositories
from octotrain.catalog.paging import Page, Window, paged
from octotrain.catalog.references import References
from octotrain.catalog.transactions import on_commit
from octotrain.catalog.uploads import add_with_objects, check_files, upload_files
from octotrain.documents import parse_document
from octotrain.errors import NotFound, StillReferenced
from octotrain.run_layout import model_import_prefix
from octotrain.storage import ObjectStore


def next_version_number(session: Session, repository_id: int) -> int:
    latest = session.scalar(
        select(func.max(ModelVersion.version)).where(ModelVersion.repository_id == repository_id)
    )
    return 1 + (latest or 0)


class ModelVersions:
    def __init__(self, session: Session, scope: Scope, store: ObjectStore) -> None:
        self.session = session
        self.scope = scope
        self.store = store
        self.repositories = ModelRepositories(session, scope, store)

    def list(self, project: str, repository: str) -> list[ModelVersion]:
        return list(self.repositories.get(project, repository).versions)

    def page(self, project: str, repository: str, window: Window) -> Page[ModelVersion]:
        """One page of a repository's versions, by number (as ``list``)."""
        found = self.repositories.get(project, repository)
        query = (
            select(ModelVersion)
            .where(ModelVersion.repository_id == found.id)
            .order_by(ModelVersion.version)
            # what a version's view reads, for the whole page at once (not a query a row)
            .options(selectinload(ModelVersion.inputs), selectinload(ModelVersion.produced))
        )
        return paged(self.session, query, window)

    def get(self, project: str, repository: str, version: int) -> ModelVersion:
        found = self.repositories.get(project, repository)
        row = _version_of(found, version)
        if row is None:
            raise NotFound(f"model version '{repository}' {version} not found")
        return row

    def import_files(
        self, project: str, repository: str, document: object, files: Mapping[str, Path]
    ) -> ModelVersion:
        """Import ``files`` (relative path → local file) as the repository's next version."""
        found = self.repositories.get(project, repository)
        parsed = parse_document(ModelImportDocument, document)
        number = next_version_number(self.session, found.id)
        prefix = model_import_prefix(project, repository, number)
        check_files(files, prefix=prefix, max_key_bytes=self.store.max_key_bytes)
        row = ModelVersion(
            repository_id=found.id,
            version=number,
            status=ModelVersionStatus.COMPLETE,
            source=ModelVersionSource.IMPORTED,
            description=parsed.description,
            object_prefix=prefix,
            lineage={
                "imported_by": self.scope.username,
                "imported_at": datetime.now(UTC).isoformat(),
            },
        )
        add_with_objects(
            self.session,
            self.store,
            row,
            lambda prefix: upload_files(self.store, files, prefix),
            taken=f"version {number} of model repository '{repository}' was taken by another "
            "import or training at the same time; import again",
        )
        return row

    def delete(self, project: str, repository: str, version: int) -> None:
        row = self.get(project, repository, version)
        referrers = References(self.session, row.repository.project).to_model_version(row)
        if referrers:
            raise StillReferenced(
                f"model version '{repository}' {version} cannot be deleted: it", referrers
            )
        prefix = row.object_prefix
        self.session.delete(row)
        self.session.flush()
        on_commit(self.session, lambda: self.store.delete_prefix(prefix))


def _version_of(repository: ModelRepository, version: int) -> ModelVersion | None:
    return next((row for row in repository.versions if row.version == version), None)
