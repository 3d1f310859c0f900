"""Model versions: listed, shown with their lineage, imported from files, deleted.

Training archives new versions (``operators/archive_model``); a user may also import one, since
incremental training starts from "a model the user imported". Both number versions 1, 2, …
per repository, so an import and an archive that race for a number cannot both have it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.orm import Session, selectinload

from octotrain.catalog.documents import ModelImportDocument
from octotrain.catalog.models import (
    ModelRepository,
    ModelVersion,
    ModelVersionSource,
    ModelVersionStatus,
)
from octotrain.catalog.named_objects import ModelRepositories
from octotrain.catalog.references import References
from octotrain.catalog.stored_versions import DeletableVersions, next_number
from octotrain.documents import parse_document
from octotrain.run_layout import model_import_prefix


def next_version_number(session: Session, repository_id: int) -> int:
    """The number an import or an archive gives the repository's next version."""
    return next_number(session, ModelVersion.repository_id, repository_id)


class ModelVersions(DeletableVersions[ModelRepository, ModelVersion]):
    owner_service = ModelRepositories
    owner_key = ModelVersion.repository_id
    missing = "model version '{owner}' {version} not found"
    undeletable = "model version '{owner}' {version} cannot be deleted: it"
    page_order = ModelVersion.version
    page_loads = (selectinload(ModelVersion.inputs), selectinload(ModelVersion.produced))

    def import_files(
        self, project: str, repository: str, document: object, files: Mapping[str, Path]
    ) -> ModelVersion:
        """Import ``files`` (relative path → local file) as the repository's next version."""
        found = self.owners.get(project, repository)
        parsed = parse_document(ModelImportDocument, document)
        number = next_version_number(self.session, found.id)
        row = ModelVersion(
            repository_id=found.id,
            version=number,
            status=ModelVersionStatus.COMPLETE,
            source=ModelVersionSource.IMPORTED,
            description=parsed.description,
            object_prefix=model_import_prefix(project, repository, number),
            lineage={
                "imported_by": self.scope.username,
                "imported_at": datetime.now(UTC).isoformat(),
            },
        )
        return self._store(
            row,
            files,
            taken=f"version {number} of model repository '{repository}' was taken by another "
            "import or training at the same time; import again",
        )

    def _referrers(self, row: ModelVersion) -> list[str]:
        return References(self.session, row.repository.project).to_model_version(row)
