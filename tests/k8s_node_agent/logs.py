"""Container logs, kept the way the kubelet keeps them: one record per line, each with the
time it was read and its stream, in the CRI log format (``<time> <stream> <F|P> <text>``).
The time of each line is what ``timestamps=true`` prefixes and what ``sinceSeconds`` and
``sinceTime`` filter on; the KubernetesPodOperator resumes an interrupted log stream from the
last timestamp it saw, so these must be the real times the lines were written."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from tests.k8s_node_agent.timestamps import rfc3339_nano

# How long a follower sleeps between looks at a log that has not changed (it is woken
# sooner when a line arrives).
_FOLLOW_WAIT_SECONDS = 0.1


@dataclass(frozen=True)
class LogRecord:
    nanoseconds: int
    stream: str
    partial: bool
    text: bytes

    def render(self, timestamps: bool) -> bytes:
        end = b"" if self.partial else b"\n"
        if timestamps:
            return rfc3339_nano(self.nanoseconds).encode() + b" " + self.text + end
        return self.text + end


def _encode(record: LogRecord) -> bytes:
    seconds, fraction = divmod(record.nanoseconds, 10**9)
    stamp = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    tag = b"P" if record.partial else b"F"
    head = f"{stamp}.{fraction:09d}Z {record.stream} ".encode()
    return head + tag + b" " + record.text + b"\n"


def _decode(line: bytes) -> LogRecord:
    stamp, stream, tag, text = line.rstrip(b"\n").split(b" ", 3)
    whole, fraction = stamp.decode().rstrip("Z").split(".")
    seconds = int(datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp())
    return LogRecord(seconds * 10**9 + int(fraction), stream.decode(), tag == b"P", text)


@dataclass(frozen=True)
class LogQuery:
    """The ``read_namespaced_pod_log`` parameters that select what is returned."""

    timestamps: bool = False
    since_nanoseconds: int | None = None  # from sinceSeconds or sinceTime
    tail_lines: int | None = None
    limit_bytes: int | None = None


class ContainerLog:
    """The log of one container: written by the threads reading its stdout and stderr,
    read by any number of API requests, followed until the container has ended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._complete = False

    def capture(self, pipe: BinaryIO, stream: str) -> threading.Thread:
        """Start a thread that records every line of ``pipe`` until it closes."""

        def pump() -> None:
            with pipe:
                for line in iter(pipe.readline, b""):
                    partial = not line.endswith(b"\n")
                    text = line[:-1] if not partial else line
                    self.append(LogRecord(time.time_ns(), stream, partial, text))

        thread = threading.Thread(target=pump, name=f"log-{self.path.stem}-{stream}", daemon=True)
        thread.start()
        return thread

    def append(self, record: LogRecord) -> None:
        with self._changed:
            with self.path.open("ab") as file:
                file.write(_encode(record))
            self._changed.notify_all()

    def mark_complete(self) -> None:
        """No more lines will come (the container has ended): followers finish."""
        with self._changed:
            self._complete = True
            self._changed.notify_all()

    @property
    def complete(self) -> bool:
        return self._complete

    def records(self) -> list[LogRecord]:
        with self._lock:
            data = self.path.read_bytes()
        return [_decode(line) for line in data.splitlines(keepends=True) if line.endswith(b"\n")]

    def tail_text(self, max_lines: int, max_bytes: int) -> str:
        """The end of the log (what ``FallbackToLogsOnError`` makes the termination
        message)."""
        lines = b"".join(r.render(False) for r in self.records()[-max_lines:])
        return lines[-max_bytes:].decode("utf-8", errors="replace")

    def read(self, query: LogQuery) -> bytes:
        """Everything the query selects, at once."""
        return b"".join(self._select(self.records(), query))

    def follow(self, query: LogQuery, cancelled: Callable[[], bool]) -> Iterator[bytes]:
        """What the query selects, then every new line as it is written, until the
        container has ended (or ``cancelled()``)."""
        with self._lock:
            data = self.path.read_bytes()
        offset = data.rfind(b"\n") + 1
        initial = [_decode(line) for line in data[:offset].splitlines(keepends=True)]
        sent = 0
        for chunk in self._select(initial, query):
            sent += len(chunk)
            yield chunk
        while not cancelled():
            with self._changed:
                size = self.path.stat().st_size
                if size <= offset:
                    if self._complete:
                        return
                    self._changed.wait(_FOLLOW_WAIT_SECONDS)
                    continue
                with self.path.open("rb") as file:
                    file.seek(offset)
                    new = file.read()
            end = new.rfind(b"\n") + 1
            offset += end
            for line in new[:end].splitlines(keepends=True):
                chunk = _decode(line).render(query.timestamps)
                if query.limit_bytes is not None:
                    if sent >= query.limit_bytes:
                        return
                    chunk = chunk[: query.limit_bytes - sent]
                sent += len(chunk)
                yield chunk

    @staticmethod
    def _select(records: list[LogRecord], query: LogQuery) -> Iterator[bytes]:
        if query.since_nanoseconds is not None:
            records = [r for r in records if r.nanoseconds >= query.since_nanoseconds]
        if query.tail_lines is not None:
            records = records[-query.tail_lines :] if query.tail_lines > 0 else []
        remaining = query.limit_bytes
        for record in records:
            chunk = record.render(query.timestamps)
            if remaining is not None:
                if remaining <= 0:
                    return
                chunk = chunk[:remaining]
                remaining -= len(chunk)
            yield chunk
