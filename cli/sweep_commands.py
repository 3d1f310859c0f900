"""``octotrain sweep …``: hyper-parameter sweeps of a task from YAML/JSON documents: create,
start (a run of the sweeps' DAG through Airflow's REST API), stop, show with its trials, list a
task's sweeps, and run the task again with the best trial's parameters."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.lazy_commands import help_of
from cli.output import FileOption, JsonOption, load_document, reported, show, show_list
from cli.session import catalog_session, cli_scope
from cli.task_commands import TaskId, trigger_task_run
from hooks.airflow.airflow_rest import REQUEST_RUN_PREFIX
from hooks.sweeps.sweep_context import sweep_context
from hooks.sweeps.sweep_report import sweep_summary, sweep_view
from octotrain.contracts import SWEEPS_DAG_ID
from octotrain.errors import Conflict
from octotrain.settings import get_settings
from octotrain.sweeps import Sweeps

sweeps_app = typer.Typer(help=help_of("sweep"), no_args_is_help=True)
SweepId = Annotated[int, typer.Argument(help="The sweep ID.")]
SWEEP_COLUMNS = ["id", "task_id", "name", "state", "counts", "node_hours", "best", "message"]
TRIAL_COLUMNS = [
    "number",
    "run_id",
    "state",
    "objective",
    "parameters",
    "duration_seconds",
    "node_hours",
]


@sweeps_app.command("create", help="Create a sweep of a task from a YAML or JSON document.")
def create_sweep(
    task_id: TaskId,
    file: FileOption,
    start: Annotated[bool, typer.Option(help="Start it at once.")] = False,
    as_json: JsonOption = False,
) -> None:
    with reported(as_json=as_json):
        with catalog_session() as session:
            sweep = Sweeps(session, cli_scope()).create(
                task_id, load_document(file), lambda task: sweep_context(session, task)
            )
            sweep_id = sweep.id
        if start:
            try:
                _start(sweep_id)
            except BaseException:
                with catalog_session() as session:  # a command that failed leaves no sweep
                    Sweeps(session, cli_scope()).delete_unstarted(sweep_id)
                raise
        _show(sweep_id, as_json=as_json)


@sweeps_app.command("start", help="Start a sweep: a run of the sweeps' DAG drives it.")
def start_sweep(sweep_id: SweepId, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json):
        _start(sweep_id)
        _show(sweep_id, as_json=as_json)


@sweeps_app.command("stop", help="Stop a sweep: its running trials stop, then it ends.")
def stop_sweep(sweep_id: SweepId, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json):
        with catalog_session() as session:
            Sweeps(session, cli_scope()).request_stop(sweep_id)
        _show(sweep_id, as_json=as_json)


@sweeps_app.command("show", help="A sweep, its result and its trials.")
def show_sweep(sweep_id: SweepId, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json):
        _show(sweep_id, as_json=as_json)


@sweeps_app.command("list", help="A task's sweeps, newest first.")
def list_sweeps(task_id: TaskId, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        url = get_settings().catalog_url
        views = [sweep_summary(session, s, url) for s in Sweeps(session, cli_scope()).list(task_id)]
        rows = views if as_json else [_row(view.model_dump(mode="json")) for view in views]
        show_list(rows, SWEEP_COLUMNS, as_json=as_json)


@sweeps_app.command("rerun-best", help="Start one run of the task with the best trial's values.")
def rerun_best(sweep_id: SweepId, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json):
        with catalog_session() as session:
            sweep = Sweeps(session, cli_scope()).get(sweep_id)
            best = sweep_summary(session, sweep, get_settings().catalog_url).best
            if best is None:
                raise Conflict(f"sweep {sweep.name} has no finished trial yet to run again")
            task_id, parameters = sweep.task_id, best.parameters
        trigger_task_run(task_id, dict(parameters), wait=False, timeout=900, as_json=as_json)


def _start(sweep_id: int) -> None:
    """Record the sweep running, then trigger its DAG run through Airflow's REST API (forgotten
    if Airflow refuses); the run id is the sweep's, so a repeat cannot start it twice."""
    from hooks.airflow.airflow_rest import AirflowRestClient, wait_until

    run_id = f"{REQUEST_RUN_PREFIX}sweep-{sweep_id}"
    with catalog_session() as session:
        Sweeps(session, cli_scope()).start(sweep_id, airflow_run_id=run_id)
    try:
        airflow = AirflowRestClient.from_settings(get_settings())
        wait_until(
            f"Airflow to parse DAG {SWEEPS_DAG_ID}",
            lambda: airflow.dag_exists(SWEEPS_DAG_ID),
            timeout=120,
        )
        airflow.trigger(SWEEPS_DAG_ID, {"sweep_id": sweep_id}, run_id=run_id)
    except BaseException:
        with catalog_session() as session:
            Sweeps(session, cli_scope()).forget_start(sweep_id)
        raise


def _show(sweep_id: int, *, as_json: bool) -> None:
    with catalog_session() as session:
        view = sweep_view(
            session, Sweeps(session, cli_scope()).get(sweep_id), get_settings().catalog_url
        )
    if as_json:
        show(view, as_json=True)
        return
    summary = _row(view.model_dump(mode="json", exclude={"trials", "spec"}))
    show(summary, as_json=False)
    trials = [trial.model_dump(mode="json") for trial in view.trials]
    if trials:
        typer.echo("")
        show_list(trials, TRIAL_COLUMNS, as_json=False)


def _row(view: dict[str, object]) -> dict[str, object]:
    """A sweep's counts and result in a few words, for a table."""
    counts = view.get("counts") or {}
    best = view.get("best")
    words = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))  # type: ignore[union-attr]
    shown = f"trial {best['trial']}: {best['objective']:.6g}" if isinstance(best, dict) else ""
    return view | {"counts": words, "best": shown}
