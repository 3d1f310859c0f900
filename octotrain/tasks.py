"""Training tasks: create, list, show, change, copy and delete, each judged by every rule of
``octotrain.task_rules`` and scoped to the user's projects. Nothing is written unless every
rule holds."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased, contains_eager

from octotrain.catalog.access import Scope
from octotrain.catalog.documents import TaskCopyDocument
from octotrain.catalog.last_run_status import NEVER_RUN
from octotrain.catalog.models import Project, Run, TrainingTask
from octotrain.catalog.paging import Page, Window, paged
from octotrain.documents import parse_document
from octotrain.errors import Conflict, InvalidInput, NotFound
from octotrain.run_lifecycle import ACTIVE_RUN_STATES
from octotrain.task_rules import ResolvedTask, check_task

# The columns a task list sorts by (``Tasks.page``), as Airflow's ``order_by`` names them.
TASK_SORTS: dict[str, Any] = {
    "id": TrainingTask.id,
    "name": func.lower(TrainingTask.name),
    "last_run": Run.started_at,
    "created": TrainingTask.created_at,
    "updated": TrainingTask.updated_at,
    "priority": TrainingTask.spec["priority"].as_integer(),
}


class Tasks:
    def __init__(self, session: Session, scope: Scope) -> None:
        self.session = session
        self.scope = scope

    def list(self, project: str | None = None) -> list[TrainingTask]:
        query = (
            select(TrainingTask)
            .join(Project)
            .where(self.scope.visible_projects())
            .order_by(Project.name, TrainingTask.id)
        )
        if project is not None:
            query = query.where(Project.name == project)
        return list(self.session.scalars(query))

    def page(
        self,
        window: Window,
        *,
        project: str | None = None,
        status: str | None = None,
        name_contains: str = "",
        sort: str = "id",
        by_project: bool = False,
    ) -> Page[tuple[TrainingTask, Run | None]]:
        """One page of the user's tasks, each with its last run (None before its first), in
        the database: ``status`` is the last run's state or ``never``; ``name_contains`` a part
        of the name, any case; ``sort`` one of ``TASK_SORTS``, ``-`` in front for descending
        (tasks without the value, never run for ``last_run``, last either way; ties by id);
        ``by_project``: grouped by project name first, as the console shows them.

        The last runs are joined to the tasks only where the filter or the order needs them;
        otherwise they are read for the page's tasks alone (a join groups every run)."""
        needs_last_run = status is not None or sort.removeprefix("-") == "last_run"
        query: Select[Any] = select(TrainingTask)
        if needs_last_run:
            last = select(Run.task_id, func.max(Run.id).label("run_id")).group_by(Run.task_id)
            newest = last.subquery()
            query = (
                select(TrainingTask, Run)
                .outerjoin(newest, newest.c.task_id == TrainingTask.id)
                .outerjoin(Run, Run.id == newest.c.run_id)
            )
        # The tasks' own project ids, not a join, and only where some projects are left out:
        # the count then reads the tasks' index alone, and a page the tasks in id order.
        if project is not None or not self.scope.admin:
            projects = select(Project.id).where(self.scope.visible_projects())
            if project is not None:
                projects = projects.where(Project.name == project)
            query = query.where(TrainingTask.project_id.in_(projects))
        # Grouped only where there are groups: one project's tasks need no sort by its name.
        by_project = by_project and self._projects_seen(project) > 1
        if by_project:
            query = query.join(Project).options(contains_eager(TrainingTask.project))
        if status == NEVER_RUN:
            query = query.where(Run.id.is_(None))
        elif status is not None:
            query = query.where(Run.state == status)
        if name_contains:
            lowered = func.lower(TrainingTask.name)
            query = query.where(lowered.contains(name_contains.lower(), autoescape=True))
        key = sort.removeprefix("-")
        column = TASK_SORTS[key]
        ordered = column.desc() if sort.startswith("-") else column.asc()
        groups = [Project.name] if by_project else []
        # Never run: last either way (the other columns are never null, and an expression in
        # the order would keep the database from reading tasks in their index's order).
        unset = [column.is_(None)] if key == "last_run" else []
        query = query.order_by(*groups, *unset, ordered, TrainingTask.id)
        if needs_last_run:
            return paged(self.session, query, window, rows=True)
        tasks: Page[TrainingTask] = paged(self.session, query, window)
        last_runs = self.last_runs([task.id for task in tasks.items])
        return Page([(task, last_runs.get(task.id)) for task in tasks.items], tasks.total)

    def _projects_seen(self, project: str | None) -> int:
        """How many projects a list of the user's tasks spans at most."""
        if project is not None:
            return 1
        visible = select(func.count()).select_from(Project).where(self.scope.visible_projects())
        return int(self.session.scalar(visible) or 0)

    def last_runs(self, task_ids: list[int]) -> dict[int, Run]:
        """The last run of each of these tasks that has one."""
        newest = self.recent_runs(task_ids, count=1)
        return {task_id: runs[0] for task_id, runs in newest.items() if runs}

    def get(self, task_id: int) -> TrainingTask:
        task = self.session.scalars(
            select(TrainingTask)
            .join(Project)
            .where(TrainingTask.id == task_id, self.scope.visible_projects())
        ).one_or_none()
        if task is None:
            raise NotFound(f"training task {task_id} not found")
        return task

    def check(self, document: object) -> ResolvedTask:
        """Judge a task document without saving it (the form's live check, ``--dry-run``)."""
        return check_task(self.session, self.scope, document)

    def create(self, document: object) -> TrainingTask:
        resolved = check_task(self.session, self.scope, document)
        task = TrainingTask(
            project_id=resolved.project.id,
            name=resolved.spec.name,
            description=resolved.spec.description,
            spec=resolved.spec.stored(),
            container_user=resolved.container_user,
        )
        self.session.add(task)
        self._flush(resolved.spec.name)
        return task

    def update(self, task_id: int, changes: object) -> TrainingTask:
        """Merge ``changes`` into the task's document and judge the result as a whole."""
        task = self.get(task_id)
        if not isinstance(changes, dict):
            raise InvalidInput.one("document", "changes must be an object")
        merged = task.spec | changes
        other_algorithm = changes.get("algorithm", task.spec["algorithm"]) != task.spec["algorithm"]
        if other_algorithm and "code_version" not in changes:
            merged.pop("code_version", None)  # the old algorithm's; the new one's newest
        resolved = check_task(self.session, self.scope, merged, current=task)
        task.name = resolved.spec.name
        task.description = resolved.spec.description
        task.spec = resolved.spec.stored()
        task.container_user = resolved.container_user
        self._flush(resolved.spec.name)
        return task

    def copy(self, task_id: int, document: object) -> TrainingTask:
        """A new task with the same document under a new name (judged again: the catalog may
        have changed since the original was saved)."""
        original = self.get(task_id)
        taken = set(
            self.session.scalars(
                select(TrainingTask.name).where(TrainingTask.project_id == original.project_id)
            )
        )
        request = parse_document(TaskCopyDocument, document).named(original.name, taken)
        return self.create(original.spec | {"name": request.name})

    def delete(self, task_id: int) -> str:
        """Delete a task and its run records; refused while one of its runs is active. The
        model versions it archived stay, with their lineage naming the task. Returns the
        deleted task's name."""
        task = self.get(task_id)
        active = [run.airflow_run_id for run in task.runs if run.state in ACTIVE_RUN_STATES]
        if active:
            raise Conflict(
                f"training task '{task.name}' has active runs ({', '.join(active)}); "
                "stop them first"
            )
        self.session.delete(task)
        self.session.flush()
        return task.name

    def runs(self, task_id: int) -> list[Run]:
        return list(self.get(task_id).runs)

    def recent_runs(self, task_ids: list[int], *, count: int) -> dict[int, list[Run]]:
        """The ``count`` newest runs of each task, newest first, in one query: each task's are
        read through the ``(task_id, id)`` index, however many runs it has."""
        other = aliased(Run)
        newest = (
            select(other.id)
            .where(other.task_id == TrainingTask.id)
            .order_by(other.id.desc())
            .limit(count)
            .correlate(TrainingTask)
            .scalar_subquery()
        )
        query = (
            select(Run)
            .select_from(TrainingTask)
            .join(Run, Run.id.in_(newest))
            .where(TrainingTask.id.in_(task_ids))
            .order_by(Run.task_id, Run.id.desc())
        )
        found: dict[int, list[Run]] = {task_id: [] for task_id in task_ids}
        for run in self.session.scalars(query):
            found[run.task_id].append(run)
        return found

    def run_counts(self, task_ids: list[int]) -> dict[int, int]:
        """How many runs each task has, in one query."""
        counted = select(Run.task_id, func.count()).where(Run.task_id.in_(task_ids))
        found = dict(self.session.execute(counted.group_by(Run.task_id)).tuples().all())
        return {task_id: found.get(task_id, 0) for task_id in task_ids}

    def runs_page(self, task_id: int, window: Window, *, newest_first: bool = False) -> Page[Run]:
        """One page of a task's runs, in the order they started (``newest_first``: reversed)."""
        task = self.get(task_id)
        order = Run.id.desc() if newest_first else Run.id.asc()
        return paged(
            self.session, select(Run).where(Run.task_id == task.id).order_by(order), window
        )

    def run(self, task_id: int, run_id: int) -> Run:
        """One run of a task of the user's projects."""
        task = self.get(task_id)
        found = self.session.get(Run, run_id)
        if found is None or found.task_id != task.id:
            raise NotFound(f"training task {task_id} has no run {run_id}")
        return found

    def resumed_by(self, task_id: int, run_id: int) -> list[int]:
        """The runs that resumed ``run_id`` from its checkpoint, in the order they started."""
        self.run(task_id, run_id)
        later = select(Run.id).where(Run.resumed_from_id == run_id).order_by(Run.id)
        return list(self.session.scalars(later))

    def run_to_stop(
        self, task_id: int, *, run_id: int | None = None, airflow_run_id: str | None = None
    ) -> Run:
        """The run a user asks to stop, by catalog ID or Airflow run ID, or else the task's
        latest active run; refused (Conflict) when that run has already ended."""
        task = self.get(task_id)
        runs = list(
            self.session.scalars(select(Run).where(Run.task_id == task.id).order_by(Run.id))
        )
        if run_id is None and airflow_run_id is None:
            active = [run for run in runs if run.state in ACTIVE_RUN_STATES]
            if not active:
                raise Conflict(f"training task '{task.name}' has no active run to stop")
            return active[-1]
        found = next(
            (run for run in runs if run.id == run_id or run.airflow_run_id == airflow_run_id),
            None,
        )
        if found is None:
            raise NotFound(f"training task {task_id} has no run {run_id or airflow_run_id}")
        if found.state not in ACTIVE_RUN_STATES:
            raise Conflict(
                f"run {found.airflow_run_id} of training task '{task.name}' has already ended "
                f"({found.state}); only a queued or running run can be stopped"
            )
        return found

    def _flush(self, name: str) -> None:
        try:
            self.session.flush()
        except IntegrityError:
            raise Conflict(
                f"a task named '{name}' was saved by another request at the same time"
            ) from None
