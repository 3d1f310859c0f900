"""Usage accounting: the maths of one run's figures, and the catalog's per-run, per-task and
per-project-month reports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hooks.storage.catalog import CatalogHook
from octotrain.catalog.accounting import Accounting, HeldSpan, Month, Usage, usage_of
from octotrain.catalog.models import Run, RunState, as_utc
from octotrain.catalog.node_holds import record_hold, record_release
from octotrain.catalog.paging import Window
from octotrain.errors import InvalidQuery, NotFound
from octotrain.storage import ObjectStore
from octotrain.tasks import Tasks
from tests.factories import ADMIN, OUTSIDER, VALID_TASK, seed
from tests.plan_rows import recorded

T0 = datetime(2026, 11, 10, 8, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def test_a_spec_without_gpus_bills_cpu_hours_and_no_gpu_hours() -> None:
    usage = usage_of(
        triggered_at=T0,
        ended_at=T0 + 3 * HOUR,
        holds=[HeldSpan(T0 + HOUR, T0 + 3 * HOUR)],
        cpu=4,
        gpu_count=0,
        now=T0 + 5 * HOUR,
    )
    assert usage == Usage(node_hours=2, cpu_hours=8, gpu_hours=0, queued_hours=1, training_hours=2)


def test_multi_node_sums_each_nodes_hold_and_times_the_run_from_first_to_last() -> None:
    usage = usage_of(
        triggered_at=T0,
        ended_at=T0 + 4 * HOUR,
        holds=[
            HeldSpan(T0 + HOUR / 2, T0 + 2 * HOUR),
            HeldSpan(T0 + HOUR, T0 + 3 * HOUR),
        ],
        cpu=8,
        gpu_count=2,
        now=T0 + 5 * HOUR,
    )
    assert usage.node_hours == pytest.approx(3.5)
    assert usage.cpu_hours == pytest.approx(28)
    assert usage.gpu_hours == pytest.approx(7)
    assert usage.queued_hours == pytest.approx(0.5)  # until the first node held its resources
    assert usage.training_hours == pytest.approx(2.5)  # first hold to last release


def test_a_run_still_running_counts_up_to_now() -> None:
    usage = usage_of(
        triggered_at=T0,
        ended_at=None,
        holds=[HeldSpan(T0 + HOUR, None), HeldSpan(T0 + 2 * HOUR, None)],
        cpu=1,
        gpu_count=1,
        now=T0 + 3 * HOUR,
    )
    assert usage.node_hours == pytest.approx(3)
    assert usage.training_hours == pytest.approx(2)
    assert usage.queued_hours == pytest.approx(1)


def test_a_run_still_queued_counts_its_wait_up_to_now_and_nothing_else() -> None:
    usage = usage_of(
        triggered_at=T0, ended_at=None, holds=[], cpu=4, gpu_count=1, now=T0 + HOUR / 4
    )
    assert usage == Usage(queued_hours=0.25)


def test_a_run_across_a_month_boundary_is_split_by_time() -> None:
    start = datetime(2026, 10, 31, 22, 0, tzinfo=UTC)
    figures = {
        "triggered_at": start,
        "ended_at": start + 4 * HOUR,
        "holds": [HeldSpan(start + HOUR, start + 4 * HOUR)],  # 23:00 to 02:00
        "cpu": 2,
        "gpu_count": 1,
        "now": start + 10 * HOUR,
    }
    october = usage_of(**figures, window=Month(2026, 10).window)  # type: ignore[arg-type]
    november = usage_of(**figures, window=Month(2026, 11).window)  # type: ignore[arg-type]
    whole = usage_of(**figures)  # type: ignore[arg-type]
    assert october.node_hours == pytest.approx(1)
    assert october.queued_hours == pytest.approx(1)
    assert november.node_hours == pytest.approx(2)
    assert november.queued_hours == 0
    assert november.gpu_hours == pytest.approx(2)
    for field in Usage.model_fields:
        total = getattr(october, field) + getattr(november, field)
        assert total == pytest.approx(getattr(whole, field)), field


def test_a_stopped_run_counts_an_unreleased_node_up_to_the_runs_end() -> None:
    usage = usage_of(
        triggered_at=T0,
        ended_at=T0 + 2 * HOUR,
        holds=[HeldSpan(T0 + HOUR, None), HeldSpan(T0 + HOUR, T0 + 2 * HOUR + HOUR / 2)],
        cpu=1,
        gpu_count=0,
        now=T0 + 9 * HOUR,
    )
    # One node's release was never recorded: billed to the run's end, not to now; the other
    # held its resources through its stop's grace period, past the run's end.
    assert usage.node_hours == pytest.approx(2.5)
    assert usage.training_hours == pytest.approx(1.5)


def test_a_run_stopped_while_queued_has_only_queued_time() -> None:
    usage = usage_of(
        triggered_at=T0, ended_at=T0 + HOUR, holds=[], cpu=1, gpu_count=1, now=T0 + 9 * HOUR
    )
    assert usage == Usage(queued_hours=1)


@pytest.mark.parametrize("text", ["2026-13", "2026-00", "2026-1", "Nov 2026", "1969-12", ""])
def test_a_bad_month_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(InvalidQuery) as refused:
        Month.parse(text)
    assert refused.value.problems[0].field == "month"
    assert "YYYY-MM" in refused.value.problems[0].rule


def test_december_ends_at_the_new_year() -> None:
    window = Month.parse("2026-12").window
    assert (window.start, window.end) == (
        datetime(2026, 12, 1, tzinfo=UTC),
        datetime(2027, 1, 1, tzinfo=UTC),
    )


def _run(
    catalog: CatalogHook,
    task_id: int,
    name: str,
    *,
    state: RunState,
    triggered_at: datetime,
    ended_at: datetime | None,
    holds: list[tuple[datetime, datetime | None]],
    gpu_count: int = 1,
) -> int:
    resources = {"spec": "gpu-x", "kind": "cce", "cpu": 4.0, "memory_mib": 1024}
    with catalog.session() as session:
        run = Run(
            task_id=task_id,
            airflow_run_id=name,
            state=state,
            node_count=len(holds) or 1,
            plan=recorded(resources=resources | {"gpu_count": gpu_count}),
            started_at=triggered_at,
            ended_at=ended_at,
        )
        session.add(run)
        session.flush()
        for index, (start, end) in enumerate(holds):
            node = f"distributed-{index}"
            record_hold(session, run_id=run.id, node_index=node, started_at=start)
            if end is not None:
                record_release(session, run_id=run.id, node_index=node, ended_at=end)
        return run.id


def test_project_month_sums_each_tasks_runs_within_the_month(
    catalog: CatalogHook, store: ObjectStore
) -> None:
    demo = seed(catalog, store)
    boundary = datetime(2026, 11, 1, tzinfo=UTC)
    _run(
        catalog, demo.task_id, "across", state=RunState.SUCCESS,
        triggered_at=boundary - 2 * HOUR, ended_at=boundary + 2 * HOUR,
        holds=[(boundary - HOUR, boundary + HOUR), (boundary - HOUR, boundary + 2 * HOUR)],
    )  # fmt: skip
    _run(
        catalog, demo.task_id, "running", state=RunState.RUNNING,
        triggered_at=boundary + 10 * HOUR, ended_at=None,
        holds=[(boundary + 11 * HOUR, None)], gpu_count=0,
    )  # fmt: skip
    _run(
        catalog, demo.task_id, "october-only", state=RunState.FAILED,
        triggered_at=boundary - 9 * HOUR, ended_at=boundary - 8 * HOUR,
        holds=[(boundary - 9 * HOUR, boundary - 8 * HOUR)],
    )  # fmt: skip
    with catalog.session() as session:
        accounting = Accounting(session, ADMIN, now=boundary + 12 * HOUR)
        november = accounting.project_month(demo.project, Month(2026, 11))
        task = accounting.task(demo.task_id, Month(2026, 11))
    assert november.month == "2026-11"
    assert [row.task_name for row in november.tasks] == [demo.task_name]
    assert november.tasks[0].runs == 2
    # across: 1 h + 2 h of its nodes in November; running: 1 h so far, without GPUs.
    assert november.total.node_hours == pytest.approx(4)
    assert november.total.gpu_hours == pytest.approx(3)
    assert november.total.cpu_hours == pytest.approx(16)
    assert task.total == november.total
    assert {run.airflow_run_id: run.usage.node_hours for run in task.runs} == {
        "across": pytest.approx(3),
        "running": pytest.approx(1),
    }


def test_an_unknown_or_hidden_project_is_not_found(
    catalog: CatalogHook, store: ObjectStore
) -> None:
    demo = seed(catalog, store)
    with catalog.session() as session:
        with pytest.raises(NotFound, match="project 'nope'"):
            Accounting(session, ADMIN).project_month("nope", Month(2026, 11))
        with pytest.raises(NotFound):
            Accounting(session, OUTSIDER).project_month(demo.project, Month(2026, 11))
        with pytest.raises(NotFound):
            Accounting(session, OUTSIDER).task(demo.task_id)


def test_a_node_tried_again_keeps_one_hold_from_first_start_to_last_end(
    catalog: CatalogHook, store: ObjectStore
) -> None:
    demo = seed(catalog, store)
    run_id = _run(
        catalog, demo.task_id, "retried", state=RunState.RUNNING,
        triggered_at=T0, ended_at=None, holds=[(T0 + HOUR, T0 + 2 * HOUR)],
    )  # fmt: skip
    with catalog.session() as session:
        hold = record_hold(
            session,
            run_id=run_id,
            node_index="distributed-0",
            started_at=T0 + 2 * HOUR,
            ended_at=T0 + 3 * HOUR,
        )
        assert hold.ended_at is not None
        assert (as_utc(hold.started_at), as_utc(hold.ended_at)) == (T0 + HOUR, T0 + 3 * HOUR)
        assert not record_release(session, run_id=run_id, node_index="single-0", ended_at=T0)


def test_a_task_s_runs_are_paged_and_its_total_counts_every_run(
    catalog: CatalogHook, store: ObjectStore
) -> None:
    demo = seed(catalog, store)
    # More runs than one chunk of the total's sum (500) and one page of the CLI's (1,000).
    count = 1203
    resources = {"spec": "cpu-x", "kind": "cce", "cpu": 2.0, "memory_mib": 512, "gpu_count": 0}
    with catalog.session() as session:
        runs = [
            Run(task_id=demo.task_id, airflow_run_id=f"many__{index}", state=RunState.FAILED,
                node_count=1, plan=recorded(resources=resources), started_at=T0 + index * HOUR,
                ended_at=T0 + index * HOUR + HOUR / 2)
            for index in range(count)
        ]  # fmt: skip
        session.add_all(runs)
    with catalog.session() as session:
        accounting = Accounting(session, ADMIN, now=T0)
        page = accounting.task(demo.task_id, None, Window(limit=10, offset=1195))
        every = accounting.task(demo.task_id, None, None)
    assert page.total_entries == every.total_entries == count
    assert [run.airflow_run_id for run in page.runs] == [f"many__{i}" for i in range(1195, 1203)]
    assert [run.airflow_run_id for run in every.runs] == [f"many__{i}" for i in range(count)]
    # Never held a node: each run is half an hour queued.
    assert page.total == every.total
    assert page.total.queued_hours == pytest.approx(count / 2)


def test_a_project_s_tasks_are_paged_most_node_hours_first(
    catalog: CatalogHook, store: ObjectStore
) -> None:
    demo = seed(catalog, store)
    with catalog.session() as session:
        tasks = Tasks(session, ADMIN)
        others = [tasks.create(VALID_TASK | {"name": f"paged-{index}"}).id for index in range(3)]
    for hours, task_id in enumerate([demo.task_id, *others], start=1):
        _run(
            catalog, task_id, f"held-{hours}", state=RunState.SUCCESS, triggered_at=T0,
            ended_at=T0 + hours * HOUR, holds=[(T0, T0 + hours * HOUR)],
        )  # fmt: skip
    with catalog.session() as session:
        accounting = Accounting(session, ADMIN, now=T0)
        second = accounting.project_month(demo.project, Month(2026, 11), Window(limit=2, offset=2))
    assert second.total_entries == 4
    assert [task.task_id for task in second.tasks] == [others[0], demo.task_id]
    assert second.total.node_hours == pytest.approx(1 + 2 + 3 + 4)
