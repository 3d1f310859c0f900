"""``octotrain usage``: usage accounting (``octotrain.catalog.accounting``) on the command line,
per project and month, per task (run by run) or for one run; the same figures as the REST API
(``--json`` prints its answer with every row: the command follows the pages)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from cli.output import JsonOption, reported, show, show_list
from cli.run_option import RUN_HELP, run_named
from cli.session import catalog_session, cli_scope
from octotrain.catalog.accounting import Accounting, Month, Usage
from octotrain.errors import InvalidQuery
from octotrain.tasks import Tasks

FIGURES = list(Usage.model_fields)
TASK_COLUMNS = ["task_id", "task_name", "runs", *FIGURES]
RUN_COLUMNS = ["run_id", "airflow_run_id", "state", "spec", "node_count", *FIGURES]
TOTAL = "TOTAL"


def usage(
    project: Annotated[
        str | None, typer.Option("--project", "-p", help="A project's month, per task.")
    ] = None,
    task: Annotated[int | None, typer.Option("--task", "-t", help="A task, per run.")] = None,
    run: Annotated[
        str | None, typer.Option("--run", "-r", help=f"{RUN_HELP} (with --task)")
    ] = None,
    month: Annotated[
        str | None,
        typer.Option(
            "--month", "-m", help="YYYY-MM in UTC; a project's is the current one by default."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Node-, CPU- and GPU-hours, queued and training time (hours), a run across months split
    by time: of a project in a month, of a task's runs, or of one run."""
    with reported(as_json=as_json):
        chosen = Month.parse(month) if month is not None else None
        if run is not None and task is None:
            raise InvalidQuery.one("run", "--run needs --task")
        if (project is None) == (task is None):
            raise InvalidQuery.one("project", "give exactly one of --project and --task")
        with catalog_session() as session:
            accounting = Accounting(session, cli_scope())
            if project is not None:
                _show_project(accounting, project, chosen, as_json=as_json)
            elif run is not None:
                assert task is not None
                runs = Tasks(session, cli_scope()).runs(task)
                named = run_named(runs, run, task_id=task)
                show(accounting.run_of(task, named.id), as_json=as_json)
            else:
                assert task is not None
                _show_task(accounting, task, chosen, as_json=as_json)


def _show_project(
    accounting: Accounting, project: str, month: Month | None, *, as_json: bool
) -> None:
    report = accounting.project_month(project, month or Month.of(datetime.now(UTC)), None)
    if as_json:
        show(report, as_json=True)
        return
    rows = [{**_rounded(row.usage), **row.model_dump(exclude={"usage"})} for row in report.tasks]
    rows.append({"task_name": TOTAL, "runs": sum(row.runs for row in report.tasks),
                 **_rounded(report.total)})  # fmt: skip
    show_list(rows, TASK_COLUMNS, as_json=False, title=f"{report.project}, {report.month} (UTC)")


def _show_task(accounting: Accounting, task: int, month: Month | None, *, as_json: bool) -> None:
    report = accounting.task(task, month, None)
    if as_json:
        show(report, as_json=True)
        return
    rows = [{**_rounded(row.usage), **row.model_dump(exclude={"usage"})} for row in report.runs]
    rows.append({"airflow_run_id": TOTAL, **_rounded(report.total)})
    when = f"{report.month} (UTC)" if report.month else "all time"
    show_list(rows, RUN_COLUMNS, as_json=False, title=f"task {task} {report.task_name}, {when}")


def _rounded(usage: Usage) -> dict[str, Any]:
    """Hours to two decimals, for people (``--json`` keeps them whole)."""
    return {name: f"{value:.2f}" for name, value in usage.model_dump().items()}
