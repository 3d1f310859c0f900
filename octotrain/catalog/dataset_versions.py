"""Dataset versions: imported from files (awaiting release), published, deleted.

The manual offers a dataset to a task when it has a published version, or a successfully
imported one awaiting release; an import that fails leaves no version and no files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import selectinload

from octotrain.catalog.documents import DatasetVersionDocument
from octotrain.catalog.models import Dataset, DatasetVersion, DatasetVersionStatus
from octotrain.catalog.named_objects import Datasets
from octotrain.catalog.references import References
from octotrain.catalog.stored_versions import DeletableVersions
from octotrain.catalog.transactions import on_commit
from octotrain.documents import judge_document
from octotrain.errors import FieldProblem, InvalidInput


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


class DatasetVersions(DeletableVersions[Dataset, DatasetVersion]):
    owner_service = Datasets
    owner_key = DatasetVersion.dataset_id
    missing = "dataset version '{owner}' {version} not found"
    undeletable = "dataset version '{owner}' {version} cannot be deleted: it"
    page_order = DatasetVersion.id
    page_loads = (selectinload(DatasetVersion.produced),)

    def create(
        self, project: str, dataset: str, document: object, files: Mapping[str, Path]
    ) -> DatasetVersion:
        """Import ``files`` (relative path → local file) as a new version awaiting release."""
        found = self.owners.get(project, dataset)

        def version_free(fields: dict[str, object]) -> list[FieldProblem]:
            name = fields.get("version")
            if isinstance(name, str) and self._find(found, name) is not None:
                return [FieldProblem("version", f"dataset '{dataset}' already has version {name}")]
            return []

        parsed = judge_document(DatasetVersionDocument, document, version_free)
        row = DatasetVersion(
            dataset_id=found.id,
            version=parsed.version,
            status=DatasetVersionStatus.IMPORTED_AWAITING_RELEASE,
            object_prefix=dataset_version_prefix(project, dataset, parsed.version),
        )
        return self._store(
            row,
            files,
            taken=f"dataset '{dataset}' version {parsed.version} was added by another request "
            "at the same time",
        )

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

    def _referrers(self, row: DatasetVersion) -> list[str]:
        return References(self.session, row.dataset.project).to_dataset_version(row)
