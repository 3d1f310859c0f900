"""A resource spec's or a project's ``max_nodes`` cannot drop below the node count of a task
saved with it: the change is refused with those tasks' names, as deleting what a task uses
is, and nothing is changed."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from octotrain.catalog.named_objects import ResourceSpecs
from octotrain.catalog.projects import Projects
from octotrain.errors import StillReferenced
from octotrain.tasks import Tasks
from tests.factories import ADMIN, VALID_TASK

SPEC = {"name": "cpu-wide", "cpu": 4, "memory_mib": 8192, "max_nodes": 8}


@pytest.fixture
def tasks_of_6_and_2_nodes(rule_session: Session) -> None:
    ResourceSpecs(rule_session, ADMIN).create("demo", SPEC)
    Projects(rule_session, ADMIN).update("demo", {"max_nodes": 8})
    tasks = Tasks(rule_session, ADMIN)
    for name, nodes in (("wide", 6), ("narrow", 2)):
        tasks.create(VALID_TASK | {"name": name, "resource_spec": "cpu-wide", "node_count": nodes})


@pytest.mark.usefixtures("tasks_of_6_and_2_nodes")
def test_a_spec_cannot_drop_below_its_tasks_node_counts(rule_session: Session) -> None:
    specs = ResourceSpecs(rule_session, ADMIN)
    with pytest.raises(StillReferenced) as refused:
        specs.update("demo", "cpu-wide", {"max_nodes": 4, "cpu": 8})
    assert str(refused.value) == (
        "resource spec 'cpu-wide' cannot have max_nodes 4: it is still referenced by "
        "task 'wide' (6 nodes)"
    )
    assert refused.value.referrers == ["task 'wide' (6 nodes)"]
    assert (specs.get("demo", "cpu-wide").max_nodes, specs.get("demo", "cpu-wide").cpu) == (8, 4)
    assert specs.update("demo", "cpu-wide", {"max_nodes": 6}).max_nodes == 6


@pytest.mark.usefixtures("tasks_of_6_and_2_nodes")
def test_a_project_cannot_drop_below_its_tasks_node_counts(rule_session: Session) -> None:
    projects = Projects(rule_session, ADMIN)
    with pytest.raises(StillReferenced) as refused:
        projects.update("demo", {"max_nodes": 1})
    assert set(refused.value.referrers) == {
        "task 'narrow' (2 nodes)",
        "task 'wide' (6 nodes)",
        "task '演示-房价回归' (2 nodes)",  # the demo task, also in the project
    }
    assert str(refused.value).startswith("project 'demo' cannot have max_nodes 1: it is")
    assert projects.get("demo").max_nodes == 8
    assert projects.update("demo", {"max_nodes": 6}).max_nodes == 6
