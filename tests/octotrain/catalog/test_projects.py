"""Projects and members: administrators manage them; members see theirs; a project that
still holds anything cannot be deleted."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from octotrain.catalog.access import Forbidden
from octotrain.catalog.projects import Projects
from octotrain.errors import InvalidInput, NotFound, StillReferenced
from tests.factories import ADMIN, MEMBER, OUTSIDER


def test_administrators_create_change_and_delete_projects(rule_session: Session) -> None:
    projects = Projects(rule_session, ADMIN)
    created = projects.create({"name": "视觉组", "description": "vision team", "max_nodes": 8})
    assert (created.name, created.max_nodes) == ("视觉组", 8)
    assert projects.update("视觉组", {"max_nodes": 16}).max_nodes == 16
    with pytest.raises(InvalidInput, match="cannot be renamed"):
        projects.update("视觉组", {"name": "vision"})
    with pytest.raises(InvalidInput, match="already exists"):
        projects.create({"name": "视觉组"})
    projects.delete("视觉组")
    with pytest.raises(NotFound):
        projects.get("视觉组")


def test_a_project_holding_anything_is_not_deleted(rule_session: Session) -> None:
    with pytest.raises(StillReferenced) as caught:
        Projects(rule_session, ADMIN).delete("other")
    assert caught.value.referrers == [
        "algorithm 'other-algo'",
        "resource spec 'other-spec'",
        "dataset 'other-data'",
        "model repository 'other-model'",
    ]


def test_members_see_their_projects_and_only_administrators_manage(rule_session: Session) -> None:
    assert [p.name for p in Projects(rule_session, MEMBER).list()] == ["other"]
    assert Projects(rule_session, OUTSIDER).list() == []
    assert {p.name for p in Projects(rule_session, ADMIN).list()} == {"demo", "other"}
    with pytest.raises(NotFound, match="project 'demo' not found"):
        Projects(rule_session, MEMBER).get("demo")
    for action in (
        lambda projects: projects.create({"name": "mine"}),
        lambda projects: projects.update("other", {"max_nodes": 1}),
        lambda projects: projects.delete("other"),
        lambda projects: projects.add_member("other", {"username": "carol"}),
    ):
        with pytest.raises(Forbidden, match="only administrators"):
            action(Projects(rule_session, MEMBER))


def test_membership_is_added_once_and_removed(rule_session: Session) -> None:
    projects = Projects(rule_session, ADMIN)
    projects.add_member("demo", {"username": "carol"})
    projects.add_member("demo", {"username": "carol"})
    assert [m.username for m in projects.get("demo").members] == ["carol"]
    assert [p.name for p in Projects(rule_session, OUTSIDER).list()] == ["demo"]
    projects.remove_member("demo", "carol")
    assert Projects(rule_session, OUTSIDER).list() == []
    with pytest.raises(NotFound, match="'carol' is not a member"):
        projects.remove_member("demo", "carol")
    with pytest.raises(InvalidInput, match="username"):
        projects.add_member("demo", {"username": ""})
