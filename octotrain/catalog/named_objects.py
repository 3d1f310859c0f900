"""Create, list, show, change and delete the catalog objects that are simply named within a
project: resource specs, algorithms, datasets and model repositories.

A change is merged into the object's current document and the result is judged by the same
rules as a new object. Deleting or renaming an object that a task or a model version still
refers to is refused with the referrers' names, and so is lowering a resource spec's
``max_nodes`` below a task's node count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel
from sqlalchemy import Select, select
from sqlalchemy.orm import Session, selectinload

from octotrain.catalog.access import Scope
from octotrain.catalog.documents import (
    AlgorithmDocument,
    DatasetDocument,
    ModelRepositoryDocument,
    ResourceSpecDocument,
)
from octotrain.catalog.models import (
    Algorithm,
    AlgorithmCode,
    Dataset,
    DatasetVersion,
    ModelRepository,
    ModelVersion,
    Project,
    ResourceSpec,
    StoredFiles,
)
from octotrain.catalog.paging import Page, Window, paged
from octotrain.catalog.references import References
from octotrain.catalog.transactions import on_commit
from octotrain.documents import judge_document
from octotrain.errors import FieldProblem, InvalidInput, NotFound, StillReferenced
from octotrain.storage import ObjectStore

RowT = TypeVar("RowT", ResourceSpec, Algorithm, Dataset, ModelRepository)


def current_document(model: type[BaseModel], row: object) -> dict[str, Any]:
    """A row's fields as the document that would create it (field names are column names)."""
    return {name: getattr(row, name) for name in model.model_fields}


class NamedObjects(Generic[RowT]):
    """The service of one kind of named object, for the user of ``scope``."""

    kind: ClassVar[str]
    row_type: ClassVar[type[Any]]
    document_type: ClassVar[type[BaseModel]]

    def __init__(self, session: Session, scope: Scope) -> None:
        self.session = session
        self.scope = scope

    def list(self, project: str) -> list[RowT]:
        return list(self.session.scalars(self._listed(project)))

    def page(self, project: str, window: Window) -> Page[RowT]:
        return paged(self.session, self._listed(project), window)

    def page_in_every_project(self, window: Window) -> Page[RowT]:
        """One page of the objects of every project the user sees, by project, then name."""
        query = (
            select(self.row_type)
            .join(Project, self.row_type.project_id == Project.id)
            .where(self.scope.visible_projects())
            .order_by(Project.name, self.row_type.name)
        )
        return paged(self.session, query, window)

    def _listed(self, project: str) -> Select[Any]:
        found = self.scope.project(self.session, project)
        return (
            select(self.row_type)
            .where(self.row_type.project_id == found.id)
            .order_by(self.row_type.name)
        )

    def get(self, project: str, name: str) -> RowT:
        found = self.scope.project(self.session, project)
        row = self._find(found, name)
        if row is None:
            raise NotFound(f"{self.kind} '{name}' not found in project '{project}'")
        return row

    def create(self, project: str, document: object) -> RowT:
        found = self.scope.project(self.session, project)
        parsed = judge_document(self.document_type, document, self._name_free(found, None))
        row = self.row_type(project_id=found.id, **self.columns(parsed))
        self.session.add(row)
        self.session.flush()
        return row

    def update(self, project: str, name: str, changes: object) -> RowT:
        row = self.get(project, name)
        if not isinstance(changes, dict):
            raise InvalidInput.one("document", "changes must be an object")
        merged = current_document(self.document_type, row) | changes
        parsed = judge_document(self.document_type, merged, self._name_free(row.project, row))
        new_name = getattr(parsed, "name", row.name)
        if new_name != row.name:
            self._refuse_if_referenced(row, action="renamed")
        columns = self.columns(parsed)
        self.refuse_breaking_change(row, columns)
        for column, value in columns.items():
            setattr(row, column, value)
        self.session.flush()
        return row

    def delete(self, project: str, name: str) -> None:
        row = self.get(project, name)
        self._refuse_if_referenced(row, action="deleted")
        self.before_delete(row)
        self.session.delete(row)
        self.session.flush()

    def columns(self, parsed: BaseModel) -> dict[str, Any]:
        """The column values of a valid document (absent optional parts left out)."""
        return parsed.model_dump(mode="json", exclude_none=True)

    def referrers(self, references: References, row: RowT) -> list[str]:
        raise NotImplementedError

    def refuse_breaking_change(self, row: RowT, columns: dict[str, Any]) -> None:
        """Raise ``StillReferenced`` when giving ``row`` these (valid) column values would
        break what refers to it; nothing does by default."""

    def before_delete(self, row: RowT) -> None:
        """Remove what the row owns (versions and their objects); nothing by default."""

    def _find(self, project: Project, name: str) -> RowT | None:
        return self.session.scalars(
            select(self.row_type).where(
                self.row_type.project_id == project.id, self.row_type.name == name
            )
        ).one_or_none()

    def _name_free(
        self, project: Project, current: RowT | None
    ) -> Callable[[dict[str, Any]], list[FieldProblem]]:
        def rule(fields: dict[str, Any]) -> list[FieldProblem]:
            name = fields.get("name")
            if name is None:
                return []
            existing = self._find(project, name)
            if existing is None or existing is current:
                return []
            return [
                FieldProblem(
                    "name", f"{self.kind} '{name}' already exists in project '{project.name}'"
                )
            ]

        return rule

    def _refuse_if_referenced(self, row: RowT, *, action: str) -> None:
        referrers = self.referrers(References(self.session, row.project), row)
        if referrers:
            raise StillReferenced(f"{self.kind} '{row.name}' cannot be {action}: it", referrers)


class ResourceSpecs(NamedObjects[ResourceSpec]):
    kind = "resource spec"
    row_type = ResourceSpec
    document_type = ResourceSpecDocument

    def referrers(self, references: References, row: ResourceSpec) -> list[str]:
        return references.to_resource_spec(row.name)

    def refuse_breaking_change(self, row: ResourceSpec, columns: dict[str, Any]) -> None:
        """A saved task's node count must stay within the spec's ``max_nodes``."""
        limit = columns["max_nodes"]
        references = References(self.session, row.project)
        over = references.needing_more_nodes(limit, resource_spec=row.name)
        if over:
            raise StillReferenced(
                f"resource spec '{row.name}' cannot have max_nodes {limit}: it", over
            )


class _Versioned(NamedObjects[RowT]):
    """Objects that own versions whose files are in the object store: deleting the object
    deletes its versions, and their files once the deletion is committed."""

    def __init__(self, session: Session, scope: Scope, store: ObjectStore) -> None:
        super().__init__(session, scope)
        self.store = store

    def versions_of(self, row: RowT) -> Sequence[StoredFiles]:
        raise NotImplementedError

    def before_delete(self, row: RowT) -> None:
        for version in self.versions_of(row):
            self.session.delete(version)
            prefix = version.object_prefix
            on_commit(self.session, lambda prefix=prefix: self.store.delete_prefix(prefix))
        self.session.flush()


class Algorithms(_Versioned[Algorithm]):
    """Algorithms own their uploaded code versions (``octotrain.catalog.algorithm_code``)."""

    kind = "algorithm"
    row_type = Algorithm
    document_type = AlgorithmDocument

    def versions_of(self, row: Algorithm) -> list[AlgorithmCode]:
        return list(row.code_versions)

    def _listed(self, project: str) -> Select[Any]:
        """Each algorithm's code versions read with the page (its view lists them)."""
        return super()._listed(project).options(selectinload(Algorithm.code_versions))

    def referrers(self, references: References, row: Algorithm) -> list[str]:
        return references.to_algorithm(row.name)


class Datasets(_Versioned[Dataset]):
    kind = "dataset"
    row_type = Dataset
    document_type = DatasetDocument

    def versions_of(self, row: Dataset) -> list[DatasetVersion]:
        return list(row.versions)

    def referrers(self, references: References, row: Dataset) -> list[str]:
        return references.to_dataset(row.name, row.versions)


class ModelRepositories(_Versioned[ModelRepository]):
    kind = "model repository"
    row_type = ModelRepository
    document_type = ModelRepositoryDocument

    def versions_of(self, row: ModelRepository) -> list[ModelVersion]:
        return list(row.versions)

    def referrers(self, references: References, row: ModelRepository) -> list[str]:
        return references.to_repository(row)
