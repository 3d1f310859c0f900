"""The training-task service: create, change, copy, delete, list; nothing written on error."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.models import Run, RunState, TrainingTask
from octotrain.errors import Conflict, InvalidInput, NotFound
from octotrain.tasks import Tasks
from tests.factories import ADMIN, MEMBER, OUTSIDER, VALID_TASK, seed


def task_count(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(TrainingTask)) or 0


def test_create_saves_the_checked_document_and_the_container_user(rule_session: Session) -> None:
    task = Tasks(rule_session, ADMIN).create(
        VALID_TASK
        | {
            "resource_spec": "modelarts-gpu",
            "algorithm": "image-algo",
            "parameters": {"n": 2},
            "data_inputs": [{"cache": "hot"}],
        }
    )
    assert task.container_user == "ma-user"
    assert task.spec["data_inputs"] == [{"cache": "hot"}]  # no empty optional parts
    assert task.spec["run_as_uid"] == 1000


def test_a_rejected_create_writes_nothing(rule_session: Session) -> None:
    before = task_count(rule_session)
    with pytest.raises(InvalidInput):
        Tasks(rule_session, ADMIN).create(VALID_TASK | {"algorithm": "nope"})
    assert task_count(rule_session) == before


def test_update_merges_and_judges_the_whole_document(rule_session: Session) -> None:
    tasks = Tasks(rule_session, ADMIN)
    task = tasks.create(VALID_TASK)
    changed = tasks.update(task.id, {"priority": 7, "description": "new"})
    assert (changed.spec["priority"], changed.description, changed.name) == (7, "new", "rule-check")
    with pytest.raises(InvalidInput) as caught:
        tasks.update(task.id, {"node_count": 99, "project": "other"})
    assert {p.field for p in caught.value.problems} == {"project"}
    with pytest.raises(InvalidInput, match="already exists"):
        tasks.update(task.id, {"name": "演示-房价回归"})
    assert tasks.update(task.id, {"name": "rule-check"}).name == "rule-check"  # its own name
    assert rule_session.get(TrainingTask, task.id).spec["priority"] == 7


def test_copy_takes_a_free_name_unless_one_is_given(rule_session: Session) -> None:
    tasks = Tasks(rule_session, ADMIN)
    task = tasks.create(VALID_TASK)
    first = tasks.copy(task.id, {})
    second = tasks.copy(task.id, {})
    named = tasks.copy(task.id, {"name": "我的副本"})
    assert [first.name, second.name, named.name] == [
        "rule-check-copy",
        "rule-check-copy-2",
        "我的副本",
    ]
    assert first.spec | {"name": task.name} == task.spec
    with pytest.raises(InvalidInput, match="name"):
        tasks.copy(task.id, {"name": "bad name"})


def test_copy_of_a_64_character_name_stays_within_the_limit(rule_session: Session) -> None:
    tasks = Tasks(rule_session, ADMIN)
    task = tasks.create(VALID_TASK | {"name": "n" * 64})
    first, second = tasks.copy(task.id, {}), tasks.copy(task.id, {})
    assert (len(first.name), len(second.name)) == (64, 64)
    assert (first.name[-2:], second.name[-2:]) == ("-2", "-3")


def test_delete_is_refused_while_a_run_is_active(rule_session: Session) -> None:
    tasks = Tasks(rule_session, ADMIN)
    task = tasks.create(VALID_TASK)
    run = Run(task_id=task.id, airflow_run_id="manual__1", state=RunState.RUNNING, node_count=1)
    rule_session.add(run)
    rule_session.flush()
    with pytest.raises(Conflict, match=r"active runs \(manual__1\); stop them first"):
        tasks.delete(task.id)
    run.state = RunState.FAILED
    tasks.delete(task.id)
    assert rule_session.get(TrainingTask, task.id) is None
    assert rule_session.scalars(select(Run).where(Run.task_id == task.id)).all() == []


def test_members_see_only_their_projects_tasks(rule_session: Session) -> None:
    other = Tasks(rule_session, ADMIN).create(
        {
            "project": "other",
            "name": "theirs",
            "resource_spec": "other-spec",
            "algorithm": "other-algo",
            "model_repository": "other-model",
        }
    )
    assert [t.name for t in Tasks(rule_session, MEMBER).list()] == ["theirs"]
    assert Tasks(rule_session, OUTSIDER).list() == []
    assert Tasks(rule_session, MEMBER).list(project="demo") == []
    assert {t.project.name for t in Tasks(rule_session, ADMIN).list()} == {"demo", "other"}
    for forbidden in (
        lambda: Tasks(rule_session, OUTSIDER).get(other.id),
        lambda: Tasks(rule_session, OUTSIDER).update(other.id, {"priority": 1}),
        lambda: Tasks(rule_session, OUTSIDER).delete(other.id),
        lambda: Tasks(rule_session, OUTSIDER).copy(other.id, {}),
    ):
        with pytest.raises(NotFound, match=f"training task {other.id} not found"):
            forbidden()


def test_a_created_task_is_committed_on_both_backends(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    seed(catalog, store)
    with catalog.session() as session:
        task_id = Tasks(session, ADMIN).create(VALID_TASK).id
    with catalog.session() as session:
        assert Tasks(session, ADMIN).get(task_id).name == "rule-check"


def test_the_run_to_stop_is_the_one_named_or_else_the_latest_active(rule_session: Session) -> None:
    tasks = Tasks(rule_session, ADMIN)
    task = tasks.create(VALID_TASK | {"name": "stoppable"})
    with pytest.raises(Conflict, match="has no active run to stop"):
        tasks.run_to_stop(task.id)
    runs = [
        Run(task_id=task.id, airflow_run_id=f"manual__{n}", state=state, node_count=1)
        for n, state in enumerate([RunState.RUNNING, RunState.QUEUED, RunState.SUCCESS])
    ]
    rule_session.add_all(runs)
    rule_session.flush()
    assert tasks.run_to_stop(task.id).airflow_run_id == "manual__1"
    assert tasks.run_to_stop(task.id, run_id=runs[0].id) is runs[0]
    assert tasks.run_to_stop(task.id, airflow_run_id="manual__0") is runs[0]
    with pytest.raises(Conflict, match=r"has already ended \(success\)"):
        tasks.run_to_stop(task.id, airflow_run_id="manual__2")
    with pytest.raises(NotFound, match="has no run manual__9"):
        tasks.run_to_stop(task.id, airflow_run_id="manual__9")
    with pytest.raises(NotFound):
        Tasks(rule_session, OUTSIDER).run_to_stop(task.id)


def test_a_page_of_tasks_is_read_in_the_database_with_each_last_run(
    rule_session: Session,
) -> None:
    from datetime import UTC, datetime, timedelta

    from octotrain.catalog.paging import Window

    tasks = Tasks(rule_session, ADMIN)
    made = [tasks.create(VALID_TASK | {"name": f"paged-{n}", "priority": n}) for n in range(5)]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for number, (task, state) in enumerate(
        [(made[1], RunState.FAILED), (made[1], RunState.SUCCESS), (made[3], RunState.FAILED)]
    ):
        rule_session.add(Run(task=task, airflow_run_id=f"r{number}", state=state, node_count=1,
                             started_at=start + timedelta(hours=number)))  # fmt: skip
    rule_session.flush()
    everything = tasks.page(Window(limit=1000))
    assert everything.total == len(everything.items) >= 5
    page = tasks.page(Window(limit=2, offset=1), name_contains="PAGED-")
    assert page.total == 5 and [task.name for task, _ in page.items] == ["paged-1", "paged-2"]
    assert [run.airflow_run_id if run else None for _, run in page.items] == ["r1", None]
    never = tasks.page(Window(), name_contains="paged-", status="never")
    assert [task.name for task, _ in never.items] == ["paged-0", "paged-2", "paged-4"]
    failed = tasks.page(Window(), name_contains="paged-", status="failed")
    assert [task.name for task, _ in failed.items] == ["paged-3"]  # paged-1 succeeded last
    latest = tasks.page(Window(limit=3), name_contains="paged-", sort="-last_run")
    assert [task.name for task, _ in latest.items] == ["paged-3", "paged-1", "paged-0"]
    highest = tasks.page(Window(limit=1), name_contains="paged-", sort="-priority")
    assert highest.items[0][0].name == "paged-4"
    ids = [task.id for task in made]
    assert [run.airflow_run_id for run in tasks.recent_runs(ids, count=1)[made[1].id]] == ["r1"]
    assert tasks.run_counts(ids)[made[1].id] == 2 and tasks.run_counts(ids)[made[0].id] == 0


@pytest.mark.parametrize(
    ("limit", "offset", "field"),
    [(0, 0, "limit"), (1001, 0, "limit"), (1, -1, "offset"), (1, 2**31, "offset")],
)
def test_a_window_outside_its_bounds_is_refused_naming_it(
    limit: int, offset: int, field: str
) -> None:
    from octotrain.catalog.paging import Window
    from octotrain.errors import InvalidQuery

    with pytest.raises(InvalidQuery) as refused:
        Window(limit=limit, offset=offset)
    assert refused.value.problems[0].field == field
