"""``octotrain task logs``: a run's log files, one file's content (whole, its last lines, or
followed live as the run writes it), and search across a node's or every node's files."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from cli.output import JsonOption, reported, show
from cli.run_option import RUN_HELP, run_named
from cli.session import catalog_session, cli_scope
from hooks.launchers import run_logs_of
from hooks.runs.log_search import search
from hooks.runs.run_logs import LogFile, RunLogs
from octotrain.catalog.models import Run
from octotrain.contracts import LOG_KINDS, NodeLogNames
from octotrain.errors import NotFound
from octotrain.log_search import SearchCursor, SearchQuery
from octotrain.log_text import MAX_PAGE_LINES, page_after, tail
from octotrain.planning import recorded_plan
from octotrain.run_lifecycle import ACTIVE_RUN_STATES
from octotrain.tasks import Tasks

FOLLOW_EVERY_SECONDS = 1.0
FOLLOW_OPENS_WITH_LINES = 200  # as a view of a running task opens at its end


def task_logs(
    task_id: Annotated[int, typer.Argument(help="The training task ID.")],
    run: Annotated[str | None, typer.Option(help=f"{RUN_HELP} (default: the latest).")] = None,
    node: Annotated[str | None, typer.Option(help="single-0, distributed-N, …")] = None,
    kind: Annotated[str, typer.Option(help="train, init, sidecar or supplemental.")] = "train",
    lines: Annotated[
        int | None, typer.Option(min=1, max=MAX_PAGE_LINES, help="Only the last N lines.")
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines while the run runs.")
    ] = False,
    grep: Annotated[
        str | None, typer.Option(help="Find lines (case-insensitive literal) in every file.")
    ] = None,
    regex: Annotated[bool, typer.Option(help="--grep is a Perl-compatible regex.")] = False,
    case_sensitive: Annotated[bool, typer.Option(help="--grep matches case.")] = False,
    context: Annotated[int, typer.Option(min=0, max=10, help="Lines around each found.")] = 0,
    as_json: JsonOption = False,
) -> None:
    """Without --node or --grep: the run's files. With --node: one file's content."""
    with reported(as_json=as_json):
        if kind not in LOG_KINDS:
            raise NotFound(f"no log kind '{kind}'; use one of {', '.join(LOG_KINDS)}")
        chosen = _chosen_run(task_id, run)
        logs = run_logs_of(chosen)
        if grep is not None:
            query = SearchQuery(grep, regex=regex, case_sensitive=case_sensitive, context=context,
                                limit=1000)  # fmt: skip
            _print_search(logs, logs.node_files(node), query, as_json=as_json)
        elif node is None:
            _print_files(chosen.airflow_run_id, logs.files(), as_json=as_json)
        else:
            logs.node_files(node)  # an unknown node is named as such
            log = logs.file(NodeLogNames(task_id, node).by_kind()[kind])
            shown = lines if lines is not None or not follow else FOLLOW_OPENS_WITH_LINES
            end = _print_content(logs, log, shown, following=follow)
            if follow:
                _follow(logs, log, end, task_id, chosen.id)


def _chosen_run(task_id: int, reference: str | None) -> Run:
    """The run ``--run`` names, or the latest one."""
    with catalog_session() as session:
        runs = Tasks(session, cli_scope()).runs(task_id)
        if reference is not None:
            chosen = run_named(runs, reference, task_id=task_id)
        elif runs:
            chosen = runs[-1]
        else:
            raise NotFound(f"training task {task_id} has no run yet")
        if recorded_plan(chosen) is None:
            raise NotFound(
                f"run {chosen.airflow_run_id} of training task {task_id} has no log files yet "
                "(it has not started)"
            )
        session.expunge(chosen)
        return chosen


def _print_files(run_id: str, files: list[LogFile], *, as_json: bool) -> None:
    listed = [{"node": f.node, "name": f.name, "size": f.size, "where": f.where} for f in files]
    if as_json:
        show({"run": run_id, "files": listed}, as_json=True)
        return
    for item in listed:
        typer.echo(f"{item['node']:<16} {item['size']:>12}  {item['name']}  ({item['where']})")


def _print_content(logs: RunLogs, log: LogFile, lines: int | None, *, following: bool) -> int:
    """The whole file, as written (a terminal renders its colours), or its last ``lines``
    lines; where the printed content ends. When following, a last line still being written
    is held back (it is printed once complete)."""
    if lines is None:
        end = 0
        for chunk in logs.chunks(log):
            end += len(chunk)
            typer.echo(chunk.decode("utf-8", "replace"), nl=False)
        return end
    source = logs.ranges(log)
    try:
        page = tail(source, lines)
    finally:
        source.close()
    shown = page.lines[:-1] if page.partial and following else page.lines
    for line in shown:
        typer.echo(line.text)
    return page.end if following or not page.partial else page.size


def _follow(logs: RunLogs, log: LogFile, end: int, task_id: int, run_id: int) -> None:
    """Print what is appended to ``log`` until the run has ended and nothing more came."""
    while True:
        active = _is_active(task_id, run_id)
        source = logs.ranges(log)
        try:
            page = page_after(source, end, MAX_PAGE_LINES)
        finally:
            source.close()
        hold = page.partial and active
        for line in page.lines[:-1] if hold else page.lines:
            typer.echo(line.text)
        if not active and (not page.lines or page.partial):
            return
        end = page.end
        if not page.lines or hold:
            time.sleep(FOLLOW_EVERY_SECONDS)


def _is_active(task_id: int, run_id: int) -> bool:
    with catalog_session() as session:
        return Tasks(session, cli_scope()).run(task_id, run_id).state in ACTIVE_RUN_STATES


def _print_search(
    logs: RunLogs, files: list[LogFile], query: SearchQuery, *, as_json: bool
) -> None:
    """Every line found, as grep prints them (``file:line:`` for a line found, ``file-line-``
    for its context), following the search's cursor to the end."""
    cursor: SearchCursor | None = None
    found = []
    while True:
        result = search(logs, files, query, cursor)
        found.extend(result.hits)
        if not as_json:
            for hit in result.hits:
                for number, text in enumerate(hit.before, start=hit.line - len(hit.before)):
                    typer.echo(f"{hit.node}/{hit.file}-{number}-{text}")
                typer.echo(f"{hit.node}/{hit.file}:{hit.line}:{hit.text}")
                for number, text in enumerate(hit.after, start=hit.line + 1):
                    typer.echo(f"{hit.node}/{hit.file}-{number}-{text}")
        if result.more is None:
            break
        cursor = result.more
    if as_json:
        show({"hits": [vars(hit) for hit in found]}, as_json=True)
    elif not found:
        raise typer.Exit(1)  # as grep: nothing found
