"""Training tasks: create, list, show, change, copy and delete, each judged by every rule of
``octotrain.task_rules`` and scoped to the user's projects. Nothing is written unless every
rule holds."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from octotrain.catalog.access import Scope
from octotrain.catalog.documents import TaskCopyDocument
from octotrain.catalog.models import Project, Run, TrainingTask
from octotrain.documents import parse_document
from octotrain.errors import Conflict, InvalidInput, NotFound
from octotrain.run_lifecycle import ACTIVE_RUN_STATES
from octotrain.task_rules import ResolvedTask, check_task


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
        resolved = check_task(self.session, self.scope, task.spec | changes, current=task)
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

    def run(self, task_id: int, run_id: int) -> Run:
        """One run of a task of the user's projects."""
        task = self.get(task_id)
        found = self.session.get(Run, run_id)
        if found is None or found.task_id != task.id:
            raise NotFound(f"training task {task_id} has no run {run_id}")
        return found

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
