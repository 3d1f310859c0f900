"""The kubelet's ``containerLogs`` endpoint, over TLS on the node's kubelet port: the apiserver
answers ``pods/log`` by proxying to ``https://<node InternalIP>:<port>/containerLogs/<namespace>
/<pod>/<container>`` with its own client certificate (``--kubelet-client-certificate``), and
checks the agent's serving certificate against the plane's CA.

The query is the kubelet's: ``follow``, ``tailLines``, ``sinceSeconds``, ``sinceTime``,
``timestamps``, ``limitBytes``, ``previous``. The apiserver has already checked that the pod
and the container exist; what only the kubelet knows (a container still waiting, no previous
one) is answered 400 with the kubelet's words, as a plain text body.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from tests.k8s_node_agent.logs import ContainerLog, LogQuery
from tests.k8s_node_agent.status import ContainerRecord
from tests.k8s_node_agent.timestamps import parse_rfc3339

# (namespace, pod, container) -> the container's log and record, None when the agent has no
# such container (the pod is not, or no more, on this node).
FindLog = Callable[[str, str, str], tuple[ContainerLog, ContainerRecord] | None]


class LogServer:
    """An HTTPS server on 127.0.0.1 that serves the node's container logs."""

    def __init__(
        self, find: FindLog, *, cert: Path, key: Path, ca: Path, stopping: threading.Event
    ) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        context.load_verify_locations(str(ca))
        context.verify_mode = ssl.CERT_REQUIRED  # only the apiserver's client certificate
        handler = type("Handler", (_Handler,), {"find": staticmethod(find),
                                                "stopping": stopping})  # fmt: skip
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="agent-log-server", daemon=True)  # fmt: skip

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    find: FindLog
    stopping: threading.Event

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the apiserver's requests are not the test's output."""

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        parts = [unquote(part) for part in url.path.strip("/").split("/")]
        if len(parts) != 4 or parts[0] != "containerLogs":
            self._text(404, "404 page not found")
            return
        _, namespace, pod, container = parts
        query = {name: values[-1] for name, values in parse_qs(url.query).items()}
        found = self.find(namespace, pod, container)
        if found is None or found[1].state == "waiting":
            reason = found[1].waiting_reason if found else "ContainerCreating"
            if reason in ("ErrImagePull", "ImagePullBackOff"):
                reason = "trying and failing to pull image"
            self._text(400, f'container "{container}" in pod "{pod}" is waiting to start: '
                            f"{reason}")  # fmt: skip
            return
        if query.get("previous") == "true":
            self._text(400, f'previous terminated container "{container}" in pod "{pod}" '
                            "not found")  # fmt: skip
            return
        try:
            selected = _log_query(query)
        except ValueError as error:
            self._text(400, str(error))
            return
        log = found[0]
        if query.get("follow") == "true":
            self._stream(log.follow(selected, self.stopping.is_set))
        else:
            self._stream(iter([log.read(selected)]))

    def _text(self, status: int, text: str) -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, chunks: Iterator[bytes]) -> None:
        """A chunked answer, each piece sent as it comes (``follow``)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in chunks:
                if chunk:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True  # the apiserver's client went away


def _log_query(query: dict[str, str]) -> LogQuery:
    def number(name: str) -> int | None:
        if name not in query:
            return None
        try:
            return int(query[name])
        except ValueError:
            raise ValueError(f"{name}: must be an integer, not {query[name]!r}") from None

    since = None
    if (since_seconds := number("sinceSeconds")) is not None:
        since = time.time_ns() - since_seconds * 10**9
    elif query.get("sinceTime"):
        since = int(parse_rfc3339(query["sinceTime"]) * 10**9)
    return LogQuery(timestamps=query.get("timestamps") == "true", since_nanoseconds=since,
                    tail_lines=number("tailLines"), limit_bytes=number("limitBytes"))  # fmt: skip
