"""Projects and their members. Creating, changing and deleting projects and managing members
is for administrators; members see their projects."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from octotrain.catalog.access import Scope
from octotrain.catalog.documents import MemberDocument, ProjectDocument
from octotrain.catalog.models import (
    Algorithm,
    DataCache,
    Dataset,
    ModelRepository,
    Project,
    ProjectMember,
    ResourceSpec,
    TrainingTask,
)
from octotrain.catalog.named_objects import current_document
from octotrain.catalog.paging import Page, Window, paged
from octotrain.catalog.references import References
from octotrain.documents import judge_document, parse_document
from octotrain.errors import FieldProblem, InvalidInput, NotFound, StillReferenced

# What a project holds, by the words the refusal to delete it uses.
CONTENTS: list[tuple[str, Any]] = [
    ("task", TrainingTask),
    ("algorithm", Algorithm),
    ("resource spec", ResourceSpec),
    ("dataset", Dataset),
    ("data cache", DataCache),
    ("model repository", ModelRepository),
]


class Projects:
    def __init__(self, session: Session, scope: Scope) -> None:
        self.session = session
        self.scope = scope

    def list(self) -> list[Project]:
        return list(self.session.scalars(self._listed()))

    def page(self, window: Window) -> Page[Project]:
        return paged(self.session, self._listed(), window)

    def _listed(self) -> Select[tuple[Project]]:
        return select(Project).where(self.scope.visible_projects()).order_by(Project.name)

    def get(self, name: str) -> Project:
        return self.scope.project(self.session, name)

    def create(self, document: object) -> Project:
        self.scope.require_admin("create projects")
        parsed = judge_document(ProjectDocument, document, self._name_free)
        project = Project(**parsed.model_dump(mode="json"))
        self.session.add(project)
        self.session.flush()
        return project

    def update(self, name: str, changes: object) -> Project:
        self.scope.require_admin("change projects")
        project = self.get(name)
        if not isinstance(changes, dict):
            raise InvalidInput.one("document", "changes must be an object")
        if changes.get("name", project.name) != project.name:
            raise InvalidInput.one("name", "a project cannot be renamed")
        merged = current_document(ProjectDocument, project) | changes
        parsed = parse_document(ProjectDocument, merged)
        over = References(self.session, project).needing_more_nodes(parsed.max_nodes)
        if over:
            raise StillReferenced(
                f"project '{name}' cannot have max_nodes {parsed.max_nodes}: it", over
            )
        project.description = parsed.description
        project.max_nodes = parsed.max_nodes
        self.session.flush()
        return project

    def delete(self, name: str) -> None:
        """Refused while the project holds anything (each is named)."""
        self.scope.require_admin("delete projects")
        project = self.get(name)
        held = [
            f"{kind} '{item}'"
            for kind, model in CONTENTS
            for item in self.session.scalars(
                select(model.name).where(model.project_id == project.id).order_by(model.name)
            )
        ]
        if held:
            raise StillReferenced(f"project '{name}' cannot be deleted: it", held)
        self.session.delete(project)
        self.session.flush()

    def add_member(self, name: str, document: object) -> Project:
        self.scope.require_admin("manage project members")
        project = self.get(name)
        member = parse_document(MemberDocument, document)
        if member.username not in {existing.username for existing in project.members}:
            project.members.append(ProjectMember(username=member.username))
            self.session.flush()
        return project

    def remove_member(self, name: str, username: str) -> Project:
        self.scope.require_admin("manage project members")
        project = self.get(name)
        member = next((item for item in project.members if item.username == username), None)
        if member is None:
            raise NotFound(f"'{username}' is not a member of project '{name}'")
        project.members.remove(member)
        self.session.flush()
        return project

    def _name_free(self, fields: dict[str, Any]) -> list[FieldProblem]:
        name = fields.get("name")
        if name is None:
            return []
        taken = self.session.scalar(select(func.count()).where(Project.name == name))
        return [FieldProblem("name", f"project '{name}' already exists")] if taken else []
