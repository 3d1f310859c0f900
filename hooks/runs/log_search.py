"""Searching log files with GNU grep, the fastest literal search there is (gigabytes a second):
a local file is read by grep in place, an object of the store is streamed to it. Python only
reads grep's answer, which is bounded by the query's limit.

Literal search runs in the C locale (bytes, ASCII case folding) unless the keyword has letters
beyond ASCII; regular expressions are Perl-compatible (``grep -P``), and one that does not
compile is refused with grep's reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import IO

from hooks.runs.run_logs import LogFile, RunLogs
from octotrain.errors import InvalidQuery
from octotrain.log_search import SearchCursor, SearchHit, SearchQuery, SearchResult
from octotrain.log_text import MAX_LINE_CHARS, display_text

# grep prints "LINE:OFFSET:text" for a line found, "LINE-OFFSET-text" for context, "--"
# between groups.
_ENTRY = re.compile(rb"(\d+)([:-])(\d+)[:-]")
# Longest stretch of one output line kept: a match inside a binary blob shows its start only.
_KEEP_BYTES = 4 * MAX_LINE_CHARS
# The pipe that streams an object to grep holds this much (Linux's default: 64 KiB), so that
# the download and grep hand over megabytes at a time, not 16 pages.
_PIPE_BYTES = 1024 * 1024


def grep_binary() -> str:
    found = shutil.which("grep")
    if found is None:
        raise RuntimeError("log search needs GNU grep on the PATH of the api-server")
    return found


def check_query(query: SearchQuery) -> None:
    """Refuse a regular expression grep cannot compile, naming grep's reason."""
    if not query.regex:
        return
    # Run as plain "grep" (the binary's path given apart, as everywhere here): grep starts
    # its messages with that name, and the server's path to it is no business of the user's.
    done = subprocess.run(
        ["grep", "-P", "-e", query.text],
        executable=grep_binary(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=_environment(query),
        check=False,
    )
    if done.returncode == 2:
        reason = done.stderr.decode("utf-8", "replace").strip().removeprefix("grep: ")
        raise InvalidQuery.one("q", f"not a valid regular expression: {reason}")


def search(
    logs: RunLogs, files: list[LogFile], query: SearchQuery, cursor: SearchCursor | None = None
) -> SearchResult:
    """Lines matching ``query`` in ``files`` (in order), from ``cursor`` on, at most
    ``query.limit`` of them."""
    check_query(query)
    names = [log.name for log in files]
    first = names.index(cursor.file) if cursor is not None and cursor.file in names else 0
    hits: list[SearchHit] = []
    for log in files[first:]:
        start = cursor if cursor is not None and cursor.file == log.name else SearchCursor(log.name)
        found, resume = _search_file(logs, log, query, start, query.limit - len(hits))
        hits.extend(found)
        if resume is not None:
            return SearchResult(hits=hits, files=names, more=resume)
    return SearchResult(hits=hits, files=names)


def _search_file(
    logs: RunLogs, log: LogFile, query: SearchQuery, start: SearchCursor, limit: int
) -> tuple[list[SearchHit], SearchCursor | None]:
    command = [
        "grep",
        "--binary-files=text",
        "--line-number",
        "--byte-offset",
        f"--max-count={limit}",
        f"--context={query.context}",
        "-P" if query.regex else "-F",
        *([] if query.case_sensitive else ["-i"]),
        "-e",
        query.text,
    ]
    path = logs.local_path(log)
    if path is not None:
        with path.open("rb") as source:
            source.seek(start.offset)
            found = _run(command, query, source, log, start)
    else:
        send = functools.partial(logs.send_to, log, start=start.offset)
        found = _run(command, query, None, log, start, send)
    hits = [hit for hit, _ in found]
    if len(hits) < limit:
        return hits, None
    last, next_offset = found[-1]
    return hits, SearchCursor(file=log.name, offset=next_offset, line=last.line)


def _run(
    command: list[str],
    query: SearchQuery,
    source: IO[bytes] | None,
    log: LogFile,
    start: SearchCursor,
    send: Callable[[int], object] | None = None,
) -> list[tuple[SearchHit, int]]:
    """Run grep on ``source`` (a file positioned at ``start``) or on what ``send`` writes to
    the pipe it reads."""
    stdin = source if source is not None else subprocess.PIPE
    with subprocess.Popen(
        command, executable=grep_binary(), stdin=stdin, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=_environment(query),
    ) as process:  # fmt: skip
        feeder = None
        if send is not None:
            assert process.stdin is not None
            with contextlib.suppress(OSError, AttributeError):  # not Linux, or over its limit
                fcntl.fcntl(process.stdin.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
            feeder = threading.Thread(target=_feed, args=(process.stdin, send), daemon=True)
            feeder.start()
        found = _read_hits(process.stdout, log, start, query.context)
        problem = process.stderr.read().decode("utf-8", "replace")[:500]
        if feeder is not None:
            feeder.join()
    if process.returncode == 2:
        raise RuntimeError(f"grep failed on {log.name}: {problem}")
    return found


def _environment(query: SearchQuery) -> dict[str, str]:
    locale = "C" if query.text.isascii() else "C.UTF-8"
    return {**os.environ, "LC_ALL": locale}


def _feed(pipe: IO[bytes], send: Callable[[int], object]) -> None:
    """Stream a log to grep (the store moves it into the pipe itself,
    hooks/storage/socket_splice.py); grep may stop reading early (its limit reached)."""
    with contextlib.suppress(BrokenPipeError):
        try:
            send(pipe.fileno())
        finally:
            pipe.close()


def _read_hits(
    stdout: IO[bytes], log: LogFile, start: SearchCursor, context: int
) -> list[tuple[SearchHit, int]]:
    """Each line found with its context, and the offset just past it (to resume from)."""
    groups: list[list[tuple[int, bool, int, bytes, int]]] = [[]]
    for raw, length in _bounded_lines(stdout):
        if raw == b"--":
            groups.append([])
            continue
        entry = _ENTRY.match(raw)
        if entry is None:
            continue
        offset = start.offset + int(entry.group(3))
        past = offset + length - entry.end() + 1  # the line and its newline
        line = start.line + int(entry.group(1))
        groups[-1].append((line, entry.group(2) == b":", offset, raw[entry.end() :], past))
    found = []
    for group in groups:
        for index, (line, is_hit, offset, text, past) in enumerate(group):
            if not is_hit:
                continue
            hit = SearchHit(
                file=log.name,
                node=log.node,
                line=line,
                offset=offset,
                text=display_text(text),
                before=[display_text(item[3]) for item in group[max(0, index - context) : index]],
                after=[display_text(item[3]) for item in group[index + 1 : index + 1 + context]],
            )
            found.append((hit, past))
    return found


def _bounded_lines(stream: IO[bytes]) -> Iterator[tuple[bytes, int]]:
    """Lines of ``stream`` without their newline, each cut to ``_KEEP_BYTES``, with the length
    (newline excluded) the line really had."""
    while kept := stream.readline(_KEEP_BYTES):
        length, piece = len(kept), kept
        while not piece.endswith(b"\n") and (piece := stream.readline(_KEEP_BYTES)):
            length += len(piece)
        newline = 1 if piece.endswith(b"\n") else 0
        yield kept.removesuffix(b"\n"), length - newline
