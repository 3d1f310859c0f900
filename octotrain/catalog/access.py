"""Who may see and change what: every catalog service call runs in a ``Scope``.

Projects scope everything. A user sees and changes only the projects they are a member of;
administrators (Airflow admins, and the ``octotrain`` command, which holds the catalog's
credentials itself) see all. A project the user may not see answers exactly like one that does
not exist, so that other projects' names are not disclosed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, exists, select, true
from sqlalchemy.orm import Session

from octotrain.catalog.models import Project, ProjectMember
from octotrain.errors import CatalogError, NotFound


class Forbidden(CatalogError, PermissionError):
    """The action needs an administrator (creating projects, managing members)."""


@dataclass(frozen=True)
class Scope:
    username: str
    admin: bool = False

    @classmethod
    def administrator(cls, username: str) -> Scope:
        return cls(username=username, admin=True)

    def visible_projects(self) -> ColumnElement[bool]:
        """A WHERE clause on ``Project`` that keeps the projects this scope may see."""
        if self.admin:
            return true()
        return exists().where(
            ProjectMember.project_id == Project.id, ProjectMember.username == self.username
        )

    def find_project(self, session: Session, name: str) -> Project | None:
        return session.scalars(
            select(Project).where(Project.name == name, self.visible_projects())
        ).one_or_none()

    def project(self, session: Session, name: str) -> Project:
        """The project ``name``, or ``NotFound`` if it does not exist or is not visible."""
        project = self.find_project(session, name)
        if project is None:
            raise NotFound(f"project '{name}' not found")
        return project

    def require_admin(self, action: str) -> None:
        if not self.admin:
            raise Forbidden(f"only administrators may {action}")
