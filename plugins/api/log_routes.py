"""A run's log files over REST: the list (grouped by node), pages of one file from either end or
any offset (how a view opens at the end and follows a live file), search across a file, a node
or every node, and downloads of one file or of all of them as a zip, both streamed.

A file is named by its exact log-contract name and looked up among the run's files, so names
that try to leave the run (``../``, absolute, encoded) simply are not found (404).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import BaseModel

from hooks.launchers import run_logs_of
from hooks.runs.log_search import search
from hooks.runs.run_logs import LogFile, RunLogs
from hooks.storage.catalog import default_catalog
from octotrain.catalog.views import RunView
from octotrain.errors import InvalidQuery
from octotrain.log_search import MAX_CONTEXT, MAX_HITS, SearchCursor, SearchQuery
from octotrain.log_text import (
    DEFAULT_PAGE_LINES,
    MAX_PAGE_LINES,
    LogPage,
    page_after,
    page_before,
    tail,
)
from octotrain.run_lifecycle import ACTIVE_RUN_STATES
from octotrain.tasks import Tasks
from plugins.api.auth import CurrentScope
from plugins.api.task_routes import RunId, TaskId

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(tags=["logs"], dependencies=[Depends(get_user)])
LogName = Annotated[str, Path(min_length=1, max_length=200)]
Offset = Annotated[int | None, Query(ge=0)]
NodeName = Annotated[str | None, Query(min_length=1, max_length=64)]


class LogFileView(BaseModel):
    name: str
    kind: str
    size: int
    modified: datetime  # the latest write

    @classmethod
    def of(cls, log: LogFile) -> LogFileView:
        modified = datetime.fromtimestamp(log.modified, UTC)
        return cls(name=log.name, kind=log.kind, size=log.size, modified=modified)


class NodeLogsView(BaseModel):
    node: str
    files: list[LogFileView]


class RunLogsView(BaseModel):
    """Every log file of a run, node by node; ``live`` while the run may still write them."""

    run: RunView
    live: bool
    nodes: list[NodeLogsView]


class LogLineView(BaseModel):
    offset: int
    text: str


class LogPageView(BaseModel):
    """Lines of one file. Page back with ``before=start``, forward (and follow) with
    ``after=end``; when ``partial`` the last line is still being written and comes again."""

    name: str
    size: int
    start: int
    end: int
    at_start: bool
    at_end: bool
    partial: bool
    # The number (from 1) of the page's first line in the file: the page's lines count on.
    first_line: int
    lines: list[LogLineView]

    @classmethod
    def of(cls, name: str, page: LogPage, first_line: int) -> LogPageView:
        return cls(
            name=name,
            first_line=first_line,
            size=page.size,
            start=page.start,
            end=page.end,
            at_start=page.at_start,
            at_end=page.at_end,
            partial=page.partial,
            lines=[LogLineView(offset=line.offset, text=line.text) for line in page.lines],
        )


class SearchHitView(BaseModel):
    file: str
    node: str
    line: int
    offset: int
    text: str
    before: list[str]
    after: list[str]


class SearchCursorView(BaseModel):
    file: str
    offset: int
    line: int


class SearchView(BaseModel):
    """Lines found, in file order; with ``more``, ask again with ``after_file``,
    ``after_offset`` and ``after_line`` set from it for the next ones."""

    query: str
    regex: bool
    files: list[str]
    hits: list[SearchHitView]
    more: SearchCursorView | None


def _run_logs(task_id: int, run_id: int, scope: CurrentScope) -> tuple[RunView, bool, RunLogs]:
    with default_catalog().session() as session:
        run = Tasks(session, scope).run(task_id, run_id)
        return RunView.of(run), run.state in ACTIVE_RUN_STATES, run_logs_of(run)


@router.get("/tasks/{task_id}/runs/{run_id}/logs", summary="The log files of a run, by node")
def list_logs(task_id: TaskId, run_id: RunId, scope: CurrentScope) -> RunLogsView:
    run, live, logs = _run_logs(task_id, run_id, scope)
    files = logs.files()
    nodes = [
        NodeLogsView(node=node, files=[LogFileView.of(f) for f in files if f.node == node])
        for node in logs.nodes
    ]
    return RunLogsView(run=run, live=live, nodes=nodes)


@router.get(
    "/tasks/{task_id}/runs/{run_id}/logs/search",
    summary="Find lines in a file, a node's files or every file (literal, case-insensitive "
    "by default)",
)
def search_logs(
    task_id: TaskId,
    run_id: RunId,
    scope: CurrentScope,
    q: Annotated[str, Query(min_length=1, max_length=256)],
    regex: bool = False,
    case_sensitive: bool = False,
    node: NodeName = None,
    file: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    context: Annotated[int, Query(ge=0, le=MAX_CONTEXT)] = 2,
    limit: Annotated[int, Query(ge=1, le=MAX_HITS)] = 100,
    after_file: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    after_offset: Annotated[int, Query(ge=0)] = 0,
    after_line: Annotated[int, Query(ge=0)] = 0,
) -> SearchView:
    _, _, logs = _run_logs(task_id, run_id, scope)
    files = [logs.file(file)] if file is not None else logs.node_files(node)
    if node is not None and file is not None and files[0].node != node:
        raise InvalidQuery.one("file", f"{file} is not a log file of node {node}")
    query = SearchQuery(q, regex=regex, case_sensitive=case_sensitive, context=context, limit=limit)
    cursor = SearchCursor(after_file, after_offset, after_line) if after_file else None
    result = search(logs, files, query, cursor)
    return SearchView(
        query=q,
        regex=regex,
        files=result.files,
        hits=[SearchHitView(**vars(hit)) for hit in result.hits],
        more=SearchCursorView(**vars(result.more)) if result.more else None,
    )


@router.get(
    "/tasks/{task_id}/runs/{run_id}/logs/download",
    summary="Every log file of the run as one zip (streamed)",
    response_class=StreamingResponse,
)
def download_all(task_id: TaskId, run_id: RunId, scope: CurrentScope) -> StreamingResponse:
    run, _, logs = _run_logs(task_id, run_id, scope)
    name = f"octotrain-task-{task_id}-{_safe(run.airflow_run_id)}-logs.zip"
    return StreamingResponse(
        logs.zip_chunks(),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@router.get("/tasks/{task_id}/runs/{run_id}/logs/{name}", summary="A page of one log file")
def read_log(
    task_id: TaskId,
    run_id: RunId,
    name: LogName,
    scope: CurrentScope,
    before: Offset = None,
    after: Offset = None,
    lines: Annotated[int, Query(ge=1, le=MAX_PAGE_LINES)] = DEFAULT_PAGE_LINES,
) -> LogPageView:
    """Without ``before`` or ``after``: the last ``lines`` lines."""
    if before is not None and after is not None:
        raise InvalidQuery.one("before", "give before or after, not both")
    _, _, logs = _run_logs(task_id, run_id, scope)
    log = logs.file(name)
    source = logs.ranges(log)
    try:
        if after is not None:
            page = page_after(source, after, lines)
        elif before is not None:
            page = page_before(source, before, lines)
        else:
            page = tail(source, lines)
        first = logs.line_number(log, source, page.lines[0].offset if page.lines else page.start)
    finally:
        source.close()
    return LogPageView.of(name, page, first)


@router.get(
    "/tasks/{task_id}/runs/{run_id}/logs/{name}/download",
    summary="One log file, streamed, under its exact name",
    response_class=StreamingResponse,
    response_model=None,
)
def download_log(
    task_id: TaskId, run_id: RunId, name: LogName, scope: CurrentScope
) -> StreamingResponse | FileResponse:
    _, _, logs = _run_logs(task_id, run_id, scope)
    log = logs.file(name)
    path = logs.local_path(log)
    if path is not None:
        return FileResponse(path, media_type="text/plain; charset=utf-8", filename=log.name)
    return StreamingResponse(
        logs.chunks(log),
        media_type="text/plain; charset=utf-8",
        # No length: a live file may have grown since it was listed.
        headers={"Content-Disposition": f'attachment; filename="{log.name}"'},
    )


def _safe(text: str) -> str:
    """``text`` as a file-name part: Airflow run ids carry ``:`` and ``+``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)
