"""Dataset versions: imported from files (awaiting release), published, deleted.

The manual offers a dataset to a task when it has a published version, or a successfully
imported one awaiting release; an import that fails leaves no version and no files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from octotrain.catalog.access import Scope
from octotrain.catalog.documents import DatasetVersionDocument
from octotrain.catalog.models import Dataset, DatasetVersion, DatasetVersionStatus
from octotrain.catalog.named_objects import Datasets
from octotrain.catalog.paging import Page, Window, paged
from octotrain.catalog.references import References
from octotrain.catalog.transactions import on_commit
from octotrain.catalog.uploads import add_with_objects, check_files, upload_files
from octotrain.documents import judge_document
from octotrain.errors import FieldProblem, InvalidInput, NotFound, StillReferenced
from octotrain.storage import ObjectStore


@dataclass(frozen=True)
class PublishedVersion:
    """A dataset version that was just published (what retraining is told)."""

    project: str
    dataset: str
    version: str
    dataset_version_id: int


def dataset_version_prefix(project: str, dataset: str, version: str) -> str:
    """Where a dataset version's files are, uploaded once when it is imported: one prefix per
    version, so what a run staged into ``DATASET`` stays what the version names."""
    return f"datasets/{project}/{dataset}/{version}"


class DatasetVersions:
    def __init__(self, session: Session, scope: Scope, store: ObjectStore) -> None:
        self.session = session
        self.scope = scope
        self.store = store
        self.datasets = Datasets(session, scope, store)

    def list(self, project: str, dataset: str) -> list[DatasetVersion]:
        return list(self.datasets.get(project, dataset).versions)

    def page(self, project: str, dataset: str, window: Window) -> Page[DatasetVersion]:
        """One page of a dataset's versions, oldest first (as ``list``)."""
        found = self.datasets.get(project, dataset)
        query = (
            select(DatasetVersion)
            .where(DatasetVersion.dataset_id == found.id)
            .order_by(DatasetVersion.id)
            # what a version's view reads, for the whole page at once (not a query a row)
            .options(selectinload(DatasetVersion.produced))
        )
        return paged(self.session, query, window)

    def get(self, project: str, dataset: str, version: str) -> DatasetVersion:
        found = self.datasets.get(project, dataset)
        row = _version_of(found, version)
        if row is None:
            raise NotFound(f"dataset version '{dataset}' {version} not found")
        return row

    def create(
        self, project: str, dataset: str, document: object, files: Mapping[str, Path]
    ) -> DatasetVersion:
        """Import ``files`` (relative path → local file) as a new version awaiting release."""
        found = self.datasets.get(project, dataset)

        def version_free(fields: dict[str, object]) -> list[FieldProblem]:
            name = fields.get("version")
            if isinstance(name, str) and _version_of(found, name) is not None:
                return [FieldProblem("version", f"dataset '{dataset}' already has version {name}")]
            return []

        parsed = judge_document(DatasetVersionDocument, document, version_free)
        prefix = dataset_version_prefix(project, dataset, parsed.version)
        check_files(files, prefix=prefix, max_key_bytes=self.store.max_key_bytes)
        row = DatasetVersion(
            dataset_id=found.id,
            version=parsed.version,
            status=DatasetVersionStatus.IMPORTED_AWAITING_RELEASE,
            object_prefix=prefix,
        )
        add_with_objects(
            self.session,
            self.store,
            row,
            lambda prefix: upload_files(self.store, files, prefix),
            taken=f"dataset '{dataset}' version {parsed.version} was added by another request "
            "at the same time",
        )
        return row

    def publish(
        self,
        project: str,
        dataset: str,
        version: str,
        *,
        on_published: Callable[[PublishedVersion], object] | None = None,
    ) -> DatasetVersion:
        """Publish a version; ``on_published`` runs once it is committed, only if the version
        was not published before (it starts the dataset's retraining runs)."""
        row = self.get(project, dataset, version)
        newly = row.status != DatasetVersionStatus.PUBLISHED
        if row.status not in (
            DatasetVersionStatus.IMPORTED_AWAITING_RELEASE,
            DatasetVersionStatus.PUBLISHED,
        ):
            raise InvalidInput.one(
                "status",
                f"dataset version '{dataset}' {version} is {row.status}; only an imported "
                "version can be published",
            )
        row.status = DatasetVersionStatus.PUBLISHED
        self.session.flush()
        if newly and on_published is not None:
            published = PublishedVersion(project, dataset, version, row.id)
            on_commit(self.session, lambda: on_published(published))
        return row

    def delete(self, project: str, dataset: str, version: str) -> None:
        row = self.get(project, dataset, version)
        referrers = References(self.session, row.dataset.project).to_dataset_version(row)
        if referrers:
            raise StillReferenced(
                f"dataset version '{dataset}' {version} cannot be deleted: it", referrers
            )
        prefix = row.object_prefix
        self.session.delete(row)
        self.session.flush()
        on_commit(self.session, lambda: self.store.delete_prefix(prefix))


def _version_of(dataset: Dataset, version: str) -> DatasetVersion | None:
    return next((row for row in dataset.versions if row.version == version), None)
