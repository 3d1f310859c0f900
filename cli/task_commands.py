"""``octotrain task …``: training tasks from YAML/JSON documents, their runs and logs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer

from cli.lazy_commands import help_of
from cli.log_commands import task_logs
from cli.output import FileOption, JsonOption, load_document, reported, show, show_list
from cli.run_option import RUN_HELP, run_named
from cli.session import catalog_session, cli_scope
from hooks.airflow.airflow_api_error import AirflowApiError
from hooks.run_stops import request_stop
from hooks.runs.run_resume import why_not_resumed
from hooks.storage.object_store import default_object_store
from octotrain.catalog.paging import every_item
from octotrain.catalog.views import RunView, TaskView
from octotrain.contracts import dag_id_for
from octotrain.errors import Conflict, InvalidInput, InvalidTrigger
from octotrain.planning import resolve_run
from octotrain.run_lifecycle import ACTIVE_RUN_STATES, forget_trigger, record_triggered
from octotrain.run_settings import RESUME_SETTING
from octotrain.secrets import held_apart
from octotrain.settings import get_settings
from octotrain.tasks import Tasks

tasks_app = typer.Typer(help=help_of("task"), no_args_is_help=True)
TaskId = Annotated[int, typer.Argument(help="The training task ID.")]
TASK_COLUMNS = ["id", "project", "name", "node_count", "priority", "resource_spec", "algorithm",
                "model_repository", "last_run"]  # fmt: skip
RUN_COLUMNS = ["id", "airflow_run_id", "state", "node_count", "started_at", "ended_at",
               "model_version", "resumed_from"]  # fmt: skip


@tasks_app.command("create", help="Create a task from a YAML or JSON document.")
def create_task(
    file: FileOption,
    dry_run: Annotated[bool, typer.Option(help="Only judge the document.")] = False,
    as_json: JsonOption = False,
) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        document = load_document(file)
        tasks = Tasks(session, cli_scope())
        if dry_run:
            resolved = tasks.check(document)
            show(
                {
                    "valid": True,
                    "container_user": resolved.container_user or str(resolved.spec.run_as_uid),
                    "parameters": resolved.parameters,
                    "env": resolved.env,
                },
                as_json=as_json,
            )
            return
        show(TaskView.of(tasks.create(document)), as_json=as_json)


@tasks_app.command("list")
def list_tasks(
    project: Annotated[str | None, typer.Option("--project", "-p")] = None,
    as_json: JsonOption = False,
) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        tasks = Tasks(session, cli_scope())
        listed = every_item(lambda window: tasks.page(window, project=project))
        views = [TaskView.of(task, last_run=run) for task, run in listed]
        if as_json:
            show_list(views, TASK_COLUMNS, as_json=True)
            return
        rows = [
            view.model_dump(mode="json")
            | {"last_run": view.last_run.state if view.last_run else None}
            for view in views
        ]
        show_list(rows, TASK_COLUMNS, as_json=False)


@tasks_app.command("show")
def show_task(task_id: TaskId, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        show(TaskView.of(Tasks(session, cli_scope()).get(task_id)), as_json=as_json)


@tasks_app.command("update", help="Change a task: the document's fields are merged in.")
def update_task(task_id: TaskId, file: FileOption, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        task = Tasks(session, cli_scope()).update(task_id, load_document(file))
        show(TaskView.of(task), as_json=as_json)


@tasks_app.command("copy")
def copy_task(
    task_id: TaskId,
    name: Annotated[str | None, typer.Option(help="The copy's name (default <name>-copy).")] = None,
    as_json: JsonOption = False,
) -> None:
    document = {} if name is None else {"name": name}
    with reported(as_json=as_json), catalog_session() as session:
        show(TaskView.of(Tasks(session, cli_scope()).copy(task_id, document)), as_json=as_json)


@tasks_app.command("delete", help="Delete a task without active runs; its DAG is retired.")
def delete_task(task_id: TaskId, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        name = Tasks(session, cli_scope()).delete(task_id)
    typer.echo(f"deleted training task {task_id}")
    _retire_over_rest(task_id, reason=f"training task '{name}' was deleted")


def _retire_over_rest(task_id: int, *, reason: str) -> None:
    """Tell Airflow, which may not be running: the DAG then goes at its next parse."""
    # Imported here: the HTTP client only where a command talks to Airflow (bench.cli).
    from hooks.airflow.airflow_rest import AirflowRestClient

    try:
        done = AirflowRestClient.from_settings(get_settings()).retire_dag(
            dag_id_for(task_id), reason=reason
        )
    except AirflowApiError as error:
        if error.status != 404:  # 404: Airflow never had the DAG
            typer.echo(f"warning: deleted, but Airflow was not told ({error}); its DAG goes "
                       "at Airflow's next parse", err=True)  # fmt: skip
        return
    typer.echo(done, err=True)


@tasks_app.command("run", help="Start a run through Airflow's REST API.")
def run_task(
    task_id: TaskId,
    conf: Annotated[
        str,
        typer.Option(help='This run\'s settings as JSON, e.g. \'{"epochs": 5, "node_count": 1}\'.'),
    ] = "{}",
    wait: Annotated[bool, typer.Option(help="Wait until the run ends.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the DAG and run.")] = 900,
    as_json: JsonOption = False,
) -> None:
    with reported(as_json=as_json):
        trigger_task_run(task_id, parse_conf(conf), wait=wait, timeout=timeout, as_json=as_json)


@tasks_app.command("resume", help="Resume a failed or stopped run from its checkpoint.")
def resume_task_run(
    task_id: TaskId,
    run: Annotated[str, typer.Option(help=RUN_HELP)],
    conf: Annotated[
        str, typer.Option(help="Settings the new run changes, as JSON (as for task run).")
    ] = "{}",
    wait: Annotated[bool, typer.Option(help="Wait until the run ends.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the DAG and run.")] = 900,
    as_json: JsonOption = False,
) -> None:
    """A new run of the task whose nodes restore the earlier run's checkpoint, recorded as
    resuming it (``resume_from`` in its conf); refused when the run is active or succeeded,
    never started, or left no checkpoint."""
    with reported(as_json=as_json):
        with catalog_session() as session:
            earlier = run_named(Tasks(session, cli_scope()).runs(task_id), run, task_id=task_id)
            refused = why_not_resumed(default_object_store(), earlier)
            if refused is not None:
                raise Conflict(refused)
            resumed = {RESUME_SETTING: earlier.id}
        trigger_task_run(
            task_id, parse_conf(conf) | resumed, wait=wait, timeout=timeout, as_json=as_json
        )


def trigger_task_run(
    task_id: int, settings_of_run: dict[str, object], *, wait: bool, timeout: float, as_json: bool
) -> None:
    """Judge the task with the run's settings (refused before Airflow is asked), record it as
    queued, then trigger it through Airflow's REST API and show the run (its end, with
    ``wait``). Secret values are held apart from the conf Airflow keeps (``octotrain.secrets``),
    in the queued run; a trigger that fails removes it."""
    # Imported here: the HTTP client only where a command talks to Airflow (bench.cli).
    from hooks.airflow.airflow_rest import (
        TERMINAL_RUN_STATES,
        AirflowRestClient,
        new_run_id,
        wait_until,
    )

    dag_id = dag_id_for(task_id)
    run_id = new_run_id()
    conf, held = held_apart(settings_of_run)
    with catalog_session() as session:
        try:
            resolved = resolve_run(
                session, Tasks(session, cli_scope()).get(task_id), conf=settings_of_run
            )
        except InvalidInput as refused:
            raise InvalidTrigger(refused.problems) from None
        resumed = settings_of_run.get(RESUME_SETTING)
        recorded = record_triggered(
            session,
            task_id,
            run_id,
            triggered_by=cli_scope().username,
            node_count=resolved.spec.node_count,
            secrets=held,
            resumed_from=resumed if isinstance(resumed, int) else None,
        )
        catalog_id = recorded.id
    try:
        airflow = AirflowRestClient.from_settings(get_settings())
        wait_until(f"Airflow to parse DAG {dag_id}", lambda: airflow.dag_exists(dag_id),
                   timeout=timeout)  # fmt: skip
        airflow.unpause(dag_id)
        airflow.trigger(dag_id, conf, run_id=run_id)
    except BaseException:
        with catalog_session() as session:
            forget_trigger(session, task_id, run_id)
        raise
    state = "queued"
    if wait:
        state = wait_until(
            f"run {run_id} to end",
            lambda: (s := airflow.run_state(dag_id, run_id)) in TERMINAL_RUN_STATES and s,
            timeout=timeout,
        )
    show({"task_id": task_id, "run": catalog_id, "dag_id": dag_id, "run_id": run_id,
          "state": state}, as_json=as_json)  # fmt: skip
    if wait and state != "success":
        raise typer.Exit(1)


def parse_conf(text: str) -> dict[str, object]:
    try:
        conf = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidTrigger.one("conf", f"is not JSON: {error}") from None
    if not isinstance(conf, dict):
        raise InvalidTrigger.one("conf", "must be a JSON object")
    return conf


@tasks_app.command("stop", help="Stop a run: every node stops, its logs are kept.")
def stop_task_run(
    task_id: TaskId,
    run: Annotated[str | None, typer.Option(help=f"{RUN_HELP} (default: the active).")] = None,
    as_json: JsonOption = False,
) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        tasks = Tasks(session, cli_scope())
        named = None if run is None else run_named(tasks.runs(task_id), run, task_id=task_id)
        chosen = tasks.run_to_stop(task_id, run_id=None if named is None else named.id)
        stop = request_stop(chosen, by=cli_scope().username)
        noted = stop.note is not None and _note_over_rest(
            task_id, chosen.airflow_run_id, note=stop.note
        )
        shown = {"task_id": task_id, "run": chosen.id, "run_id": chosen.airflow_run_id,
                 "stopping": stop.flag.text(), "noted_in_airflow": noted}  # fmt: skip
        show(shown, as_json=as_json)


def _note_over_rest(task_id: int, run_id: str, *, note: str) -> bool:
    """Put the stop's note on the run in Airflow, which may not be reachable from here: the
    run stops all the same (the flag is up), only Airflow's page of it does not say why."""
    # Imported here: the HTTP client only where a command talks to Airflow (bench.cli).
    from hooks.airflow.airflow_rest import AirflowRestClient

    try:
        AirflowRestClient.from_settings(get_settings()).add_run_note(
            dag_id_for(task_id), run_id, note=note
        )
    except AirflowApiError as error:
        typer.echo(f"warning: stopping, but Airflow's run has no note saying so ({error})",
                   err=True)  # fmt: skip
        return False
    return True


@tasks_app.command("status", help="The task and its runs as the catalog has them.")
def task_status(task_id: TaskId, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        tasks = Tasks(session, cli_scope())
        task = TaskView.of(tasks.get(task_id))
        runs = [RunView.of(run) for run in tasks.runs(task_id)]
        if as_json:
            show({"task": task.model_dump(mode="json"),
                  "runs": [run.model_dump(mode="json") for run in runs]}, as_json=True)  # fmt: skip
            return
        typer.echo(f"task {task.id} '{task.name}' of project {task.project} ({task.dag_id})")
        show_list(runs, RUN_COLUMNS, as_json=False)


# The runs listed with where each active one stands in its queue.
QUEUED_RUN_COLUMNS = ["id", "airflow_run_id", "state", "node_count", "started_at", "queue"]


@tasks_app.command("runs", help="The task's runs; an active run's place in its queue, and why.")
def task_runs(task_id: TaskId, as_json: JsonOption = False) -> None:
    # Imported here: a queue on the cluster is read with the Kubernetes client (bench.cli).
    from hooks.run_admission import queue_state

    now = datetime.now(UTC)
    with reported(as_json=as_json), catalog_session() as session:
        rows = []
        for run in Tasks(session, cli_scope()).runs(task_id):
            state = queue_state(run) if run.state in ACTIVE_RUN_STATES else None
            row = RunView.of(run).model_dump(mode="json")
            row["queue"] = state.in_words(now) if state else ""
            row["admission"] = None if state is None else {
                "queue": state.queue, "asked": state.asked, "position": state.position,
                "reason": state.reason, "waited_seconds": round(state.waited_seconds(now), 1),
                "admitted": state.admitted_at is not None,
            }  # fmt: skip
            rows.append(row)
        show_list(rows, QUEUED_RUN_COLUMNS, as_json=as_json)


tasks_app.command("logs", help="A run's log files: list, print, follow (-f), search (--grep).")(
    task_logs
)
