"""Usage accounting: what a platform team bills and plans with.

Per run: node-hours (the time each node held its resources, ``octotrain.catalog.node_holds``,
summed over the nodes), CPU-hours and GPU-hours (node-hours times the CPUs and GPUs of the
resource spec the run was planned with), queued time (from the trigger to the first node holding
its resources; the whole run when no node ever held any) and training time (from the first
node holding its resources to the last one releasing them). Per task, the sum of its runs; per
project and month, the sum of its tasks. Something still going on counts up to ``now``.

Months are calendar months in UTC. Every figure is time, so a run that spans a month boundary is
split by time: each month gets the part of each interval that lies within it.

Answers are paged (``octotrain.catalog.paging``): a task's runs are read a page at a time in the
database; its total, and a project's tasks (ordered by node-hours, which only the sum of their
runs gives), are summed over the runs a chunk at a time, so 20,000 runs are never held at once.

(``octotrain.catalog.usage`` is another thing: which tasks and runs used a model version.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict
from sqlalchemy import ColumnElement, Select, or_, select
from sqlalchemy.orm import Session

from octotrain.catalog import paging
from octotrain.catalog.access import Scope
from octotrain.catalog.models import NodeHold, Project, Run, TrainingTask, as_utc
from octotrain.errors import InvalidQuery
from octotrain.planning import recorded_plan
from octotrain.tasks import Tasks

MONTH_PATTERN = re.compile(r"^(\d{4})-(\d{2})$")
SECONDS_PER_HOUR = 3600.0
# Runs summed per round trip: their node holds are read with one IN list.
CHUNK = 500
FIRST_PAGE = paging.Window()


@dataclass(frozen=True)
class Window:
    """A half-open span of time, [start, end)."""

    start: datetime
    end: datetime

    def overlap_seconds(self, start: datetime, end: datetime) -> float:
        """How many seconds of [start, end) lie within this window."""
        seconds = (min(end, self.end) - max(start, self.start)).total_seconds()
        return max(0.0, seconds)


ALL_TIME = Window(datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC))


@dataclass(frozen=True)
class Month:
    """A calendar month in UTC."""

    year: int
    month: int

    @classmethod
    def parse(cls, text: str, *, field: str = "month") -> Month:
        """``YYYY-MM``, or ``InvalidQuery`` naming ``field`` and the rule."""
        found = MONTH_PATTERN.match(text)
        if found is None or not 1 <= int(found[2]) <= 12 or int(found[1]) < 1970:
            raise InvalidQuery.one(
                field, f"must be a month as YYYY-MM (UTC, from 1970), e.g. 2026-11; not {text!r}"
            )
        return cls(int(found[1]), int(found[2]))

    @classmethod
    def of(cls, moment: datetime) -> Month:
        moment = as_utc(moment).astimezone(UTC)
        return cls(moment.year, moment.month)

    @property
    def window(self) -> Window:
        start = datetime(self.year, self.month, 1, tzinfo=UTC)
        following = (start + timedelta(days=32)).replace(day=1)
        return Window(start, following)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


class Usage(BaseModel):
    """Figures in hours."""

    model_config = ConfigDict(frozen=True)

    node_hours: float = 0.0
    cpu_hours: float = 0.0
    gpu_hours: float = 0.0
    queued_hours: float = 0.0
    training_hours: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            node_hours=self.node_hours + other.node_hours,
            cpu_hours=self.cpu_hours + other.cpu_hours,
            gpu_hours=self.gpu_hours + other.gpu_hours,
            queued_hours=self.queued_hours + other.queued_hours,
            training_hours=self.training_hours + other.training_hours,
        )


@dataclass(frozen=True)
class HeldSpan:
    """One node's hold; ``end`` None while it holds its resources."""

    start: datetime
    end: datetime | None


def usage_of(
    *,
    triggered_at: datetime,
    ended_at: datetime | None,
    holds: list[HeldSpan],
    cpu: float,
    gpu_count: int,
    now: datetime,
    window: Window = ALL_TIME,
) -> Usage:
    """The usage of one run within ``window``: triggered at ``triggered_at``, ended at
    ``ended_at`` (None: still active), its nodes' ``holds``, each node with ``cpu`` CPUs and
    ``gpu_count`` GPUs. A hold still open counts up to ``now``, or to the run's end when the
    run has ended without its node's release being recorded (a launcher lost meanwhile)."""
    run_end = as_utc(ended_at) if ended_at is not None else now
    spans = [(as_utc(h.start), as_utc(h.end) if h.end is not None else run_end) for h in holds]
    spans = [(start, max(start, end)) for start, end in spans]
    node_seconds = sum(window.overlap_seconds(start, end) for start, end in spans)
    triggered = as_utc(triggered_at)
    if spans:
        first_start = min(start for start, _ in spans)
        last_end = max(end for _, end in spans)
        queued_seconds = window.overlap_seconds(triggered, max(triggered, first_start))
        training_seconds = window.overlap_seconds(first_start, last_end)
    else:
        queued_seconds = window.overlap_seconds(triggered, max(triggered, run_end))
        training_seconds = 0.0
    node_hours = node_seconds / SECONDS_PER_HOUR
    return Usage(
        node_hours=node_hours,
        cpu_hours=node_hours * cpu,
        gpu_hours=node_hours * gpu_count,
        queued_hours=queued_seconds / SECONDS_PER_HOUR,
        training_hours=training_seconds / SECONDS_PER_HOUR,
    )


class RunUsage(BaseModel):
    """One run's usage, with the spec it was billed at."""

    model_config = ConfigDict(frozen=True)

    run_id: int
    task_id: int
    task_name: str
    airflow_run_id: str
    state: str
    node_count: int
    spec: str
    cpu: float
    gpu_count: int
    triggered_at: datetime
    ended_at: datetime | None
    # Nodes whose hold was recorded (runs from before accounting have none).
    nodes_recorded: int
    usage: Usage


class TaskUsage(BaseModel):
    model_config = ConfigDict(frozen=True)

    task_id: int
    task_name: str
    runs: int
    usage: Usage


class TaskRunsUsage(BaseModel):
    """A task's usage in one month (``month`` None: all time): its total over every run, one
    page of its runs (oldest first) and how many runs there are in all."""

    model_config = ConfigDict(frozen=True)

    task_id: int
    task_name: str
    month: str | None
    total: Usage
    runs: list[RunUsage]
    total_entries: int


class ProjectMonthUsage(BaseModel):
    """A project's usage in one month: its totals, one page of its tasks' parts (most
    node-hours first) and how many tasks used anything that month."""

    model_config = ConfigDict(frozen=True)

    project: str
    month: str
    total: Usage
    tasks: list[TaskUsage]
    total_entries: int


def run_usage(run: Run, holds: list[NodeHold], *, now: datetime, window: Window) -> RunUsage:
    """``run``'s usage within ``window``, billed at the resource spec of its plan (a run that
    was never planned held nothing)."""
    plan = recorded_plan(run)
    resources = plan.resources if plan else None
    cpu, gpu_count = (resources.cpu, resources.gpu_count) if resources else (0.0, 0)
    usage = usage_of(
        triggered_at=run.started_at,
        ended_at=run.ended_at,
        holds=[HeldSpan(hold.started_at, hold.ended_at) for hold in holds],
        cpu=cpu,
        gpu_count=gpu_count,
        now=now,
        window=window,
    )
    return RunUsage(
        run_id=run.id,
        task_id=run.task_id,
        task_name=run.task.name,
        airflow_run_id=run.airflow_run_id,
        state=str(run.state),
        node_count=run.node_count,
        spec=resources.spec if resources else "",
        cpu=cpu,
        gpu_count=gpu_count,
        triggered_at=as_utc(run.started_at),
        ended_at=as_utc(run.ended_at) if run.ended_at else None,
        nodes_recorded=len(holds),
        usage=usage,
    )


class Accounting:
    """Usage of what ``scope`` may see: a project the user is not in is not found."""

    def __init__(self, session: Session, scope: Scope, *, now: datetime | None = None) -> None:
        self.session = session
        self.scope = scope
        self.now = now or datetime.now(UTC)

    def project_month(
        self, project: str, month: Month, window: paging.Window | None = FIRST_PAGE
    ) -> ProjectMonthUsage:
        """Project ``project``'s usage in ``month``: its total and the ``window`` of its tasks
        (every one if None; those with no usage that month are left out), most node-hours
        first."""
        row, tasks = self._project_tasks(project, month)
        shown = tasks if window is None else tasks[window.offset : window.offset + window.limit]
        return ProjectMonthUsage(
            project=row.name,
            month=str(month),
            total=sum((task.usage for task in tasks), Usage()),
            tasks=shown,
            total_entries=len(tasks),
        )

    def _project_tasks(self, project: str, month: Month) -> tuple[Project, list[TaskUsage]]:
        """Project ``project`` and every task's part of its usage in ``month``, most
        node-hours first: one row per task, the runs summed a chunk at a time."""
        row = self.scope.project(self.session, project)
        per_task: dict[int, TaskUsage] = {}
        window = month.window
        for usage in self._usages(self._runs(TrainingTask.project_id == row.id, window), window):
            known = per_task.get(usage.task_id)
            per_task[usage.task_id] = TaskUsage(
                task_id=usage.task_id,
                task_name=usage.task_name,
                runs=(known.runs if known else 0) + 1,
                usage=(known.usage if known else Usage()) + usage.usage,
            )
        tasks = sorted(per_task.values(), key=lambda task: (-task.usage.node_hours, task.task_name))
        return row, tasks

    def task(
        self, task_id: int, month: Month | None = None, window: paging.Window | None = FIRST_PAGE
    ) -> TaskRunsUsage:
        """Task ``task_id``'s usage within ``month`` (all time if None): its total and the
        ``window`` of its runs (every one if None, read a page at a time)."""
        task = Tasks(self.session, self.scope).get(task_id)
        time_window = _window_of(month)
        runs_of_task = self._runs(TrainingTask.id == task.id, time_window)
        total = sum((run.usage for run in self._usages(runs_of_task, time_window)), Usage())

        def read(page: paging.Window) -> paging.Page[RunUsage]:
            found = paging.paged(self.session, runs_of_task, page)
            return paging.Page(self._with_holds(found.items, time_window), found.total)

        if window is None:
            runs = list(paging.every_item(read))
            count = len(runs)
        else:
            shown = read(window)
            runs, count = shown.items, shown.total
        return TaskRunsUsage(
            task_id=task.id,
            task_name=task.name,
            month=str(month) if month else None,
            total=total,
            runs=runs,
            total_entries=count,
        )

    def run_of(self, task_id: int, run_id: int) -> RunUsage:
        """Run ``run_id`` of task ``task_id``, all time."""
        run = Tasks(self.session, self.scope).run(task_id, run_id)
        holds = list(self.session.scalars(select(NodeHold).where(NodeHold.run_id == run.id)))
        return run_usage(run, holds, now=self.now, window=ALL_TIME)

    def _runs(self, which: ColumnElement[bool], window: Window) -> Select[tuple[Run]]:
        """The runs of the tasks ``which`` selects that used anything within ``window``:
        triggered before it ends, and ended (themselves or a node's hold) after it starts;
        oldest first."""
        holds_after = select(NodeHold.run_id).where(
            or_(NodeHold.ended_at.is_(None), NodeHold.ended_at >= window.start)
        )
        return (
            select(Run)
            .join(TrainingTask)
            .where(
                which,
                Run.started_at < window.end,
                or_(
                    Run.ended_at.is_(None),
                    Run.ended_at >= window.start,
                    Run.id.in_(holds_after),
                ),
            )
            .order_by(Run.started_at, Run.id)
        )

    def _usages(self, runs: Select[tuple[Run]], window: Window) -> Iterator[RunUsage]:
        """The usage within ``window`` of every run ``runs`` selects, ``CHUNK`` at a time."""
        offset = 0
        while chunk := list(self.session.scalars(runs.limit(CHUNK).offset(offset))):
            yield from self._with_holds(chunk, window)
            offset += len(chunk)

    def _with_holds(self, runs: list[Run], window: Window) -> list[RunUsage]:
        """The usage of ``runs`` within ``window``, their node holds read in one query."""
        holds: dict[int, list[NodeHold]] = {}
        if runs:
            found = self.session.scalars(
                select(NodeHold).where(NodeHold.run_id.in_([run.id for run in runs]))
            )
            for hold in found:
                holds.setdefault(hold.run_id, []).append(hold)
        return [run_usage(run, holds.get(run.id, []), now=self.now, window=window) for run in runs]


def _window_of(month: Month | None) -> Window:
    return month.window if month else ALL_TIME
