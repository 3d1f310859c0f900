"""A proxy in front of the tests' real kube-apiserver that answers with failures on cue: the
next N requests of a method on a path get a 429 or a 5xx (with a ``Status`` body, and
``Retry-After`` when asked), as a busy or restarting API server (or a failing load balancer in
front of it) answers; every other request is passed to the apiserver as its admin, and its
answer passed back. It records every request, so a test can count a client's tries.

For the tests of a client's retries (``hooks.kubernetes.kubernetes_retry``): a real control plane
cannot be made to fail one request cheaply. It serves plain HTTP on 127.0.0.1 and needs no
credentials (``write_kubeconfig``); it is stopped with its context. Test equipment."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import yaml

from tests.k8s_control_plane import ControlPlane

LOOPBACK = "127.0.0.1"
# Headers of the apiserver's answer that do not pass a proxy as they are.
HOP_BY_HOP = {"connection", "transfer-encoding", "content-length", "keep-alive"}
REASONS = {429: "TooManyRequests", 500: "InternalError", 502: "BadGateway",
           503: "ServiceUnavailable", 504: "Timeout"}  # fmt: skip


class ProxiedRequest(NamedTuple):
    method: str
    path: str  # with the query


@dataclass
class _Fault:
    method: str
    path: str
    status: int
    times: int
    retry_after: int | None


class FaultProxy:
    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.requests: list[ProxiedRequest] = []
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((LOOPBACK, 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="k8s-fault-proxy")  # fmt: skip
        self._api = plane.client()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self._server.server_address[1]}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._api.close()

    def write_kubeconfig(self, path: Path, *, namespace: str) -> Path:
        """A kubeconfig of this proxy (no credentials: the proxy acts as the admin)."""
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "proxy",
            "clusters": [{"name": "proxy", "cluster": {"server": self.url}}],
            "users": [{"name": "proxy", "user": {}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy",
                                                        "namespace": namespace}}],
        }))  # fmt: skip
        return path

    def fail_next(
        self, method: str, path: str, *, status: int, times: int = 1,
        retry_after: int | None = None,
    ) -> None:  # fmt: skip
        """Answer the next ``times`` ``method`` requests on a path starting with ``path`` with
        ``status`` instead of passing them on."""
        with self._lock:
            self._faults.append(_Fault(method, path, status, times, retry_after))

    def calls(self, method: str, path: str) -> int:
        """How many ``method`` requests on a path starting with ``path`` came, failed or not."""
        with self._lock:
            return sum(1 for r in self.requests if r.method == method and r.path.startswith(path))

    def answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Any:
        """(status, headers, body) for a request: a scripted failure, or the apiserver's."""
        with self._lock:
            self.requests.append(ProxiedRequest(method, path))
            fault = next((f for f in self._faults if f.method == method
                          and path.startswith(f.path) and f.times > 0), None)  # fmt: skip
            if fault is not None:
                fault.times -= 1
        if fault is not None:
            reason = REASONS.get(fault.status, "InternalError")
            status_body = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                           "reason": reason, "code": fault.status,
                           "message": f"injected by the tests' fault proxy: {reason}"}  # fmt: skip
            extra = {"Retry-After": str(fault.retry_after)} if fault.retry_after else {}
            return (
                fault.status,
                {"Content-Type": "application/json", **extra},
                (httpx.Response(200, json=status_body).content),
            )
        answer = self._api.request(method, path, content=body or None, headers=headers)
        kept = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP}
        return answer.status_code, kept, answer.content


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() in ("content-type", "accept", "user-agent")}  # fmt: skip
            status, answer_headers, content = proxy.answer(self.command, self.path, headers, body)
            self.send_response(status)
            for name, value in answer_headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _relay

        def log_message(self, *_: object) -> None:  # quiet: the tests read ``requests``
            return

    return Handler
