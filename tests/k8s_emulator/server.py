"""The HTTP side of the emulated API server: the core/v1 REST paths the kubernetes client
calls, JSON in and out, ``Status`` bodies for errors, chunked streaming for ``follow=true``
logs and ``watch=true`` lists. HTTP/1.1 with keep-alive, as the client's urllib3 pool
expects; every open connection is closed when the emulator stops."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import socketserver
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.k8s_emulator.cluster import Cluster
from tests.k8s_emulator.logs import LogQuery
from tests.k8s_emulator.objects import ApiError, bad_request, parse_rfc3339
from tests.k8s_emulator.selectors import SelectorError
from tests.k8s_emulator.store import GROUP_VERSIONS, KINDS, api_version

VERSION = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-04-23T00:00:00Z",
    "goVersion": "go1.24.2",
    "compiler": "gc",
    "platform": "linux/amd64",
}
_KIND_PATTERN = "|".join(kind for kind in KINDS if kind not in GROUP_VERSIONS)
_NAMESPACED = rf"^/api/v1/namespaces/(?P<namespace>[^/]+)/(?P<kind>{_KIND_PATTERN})"
_NETWORKING = r"^/apis/networking\.k8s\.io/v1"
_NETWORKING_NAMESPACED = rf"{_NETWORKING}/namespaces/(?P<namespace>[^/]+)/(?P<kind>networkpolicies)"
# How often a watch looks for changes when nothing wakes it.
_WATCH_POLL_SECONDS = 0.2


class ApiRequest(NamedTuple):
    """A request as received: its method, its path with the query, and who sent it."""

    method: str
    path: str
    user_agent: str


class Fault(NamedTuple):
    """An answer scripted for the next ``times`` requests of ``method`` on a path starting
    with ``path``: a transient failure (429, 503 ...) that a client should try again after."""

    method: str
    path: str
    status: int
    times: int
    retry_after: int | None


_FAULT_REASONS = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
                  504: "Timeout"}  # fmt: skip


class ApiHttpServer(ThreadingHTTPServer):
    """A threading HTTP server that remembers its connections, to close them on stop."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        # Every request received, for tests that check what a client needs from the API (e.g.
        # that an RBAC Role allows each of its calls).
        self.requests: list[ApiRequest] = []
        self.faults: list[Fault] = []
        super().__init__(("127.0.0.1", 0), ApiHandler)

    def take_fault(self, method: str, path: str) -> Fault | None:
        """The scripted fault this request meets, if any (one of its ``times`` used up)."""
        with self._connections_lock:
            for index, fault in enumerate(self.faults):
                if fault.method == method and path.startswith(fault.path):
                    if fault.times > 1:
                        self.faults[index] = fault._replace(times=fault.times - 1)
                    else:
                        del self.faults[index]
                    return fault
        return None

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which may wait on DNS; not needed.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-request is no server error (a real API server drops the
        connection): no traceback for it."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _ClientGone(Exception):
    """The client closed the connection in the middle of a stream."""


class ApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ApiHttpServer

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the tests' output is for the tests

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def cluster(self) -> Cluster:
        return self.server.cluster

    def _dispatch(self, method: str) -> None:
        self.server.requests.append(
            ApiRequest(method, self.path, self.headers.get("User-Agent", ""))
        )
        url = urlsplit(self.path)
        self.query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            self.body = self._read_body()
            fault = self.server.take_fault(method, url.path)
            if fault is not None:
                self._send_fault(fault)
                return
            for route_method, pattern, handler in _ROUTES:
                match = pattern.match(url.path)
                if match and route_method == method:
                    handler(self, **match.groupdict())
                    return
            if any(pattern.match(url.path) for _, pattern, _ in _ROUTES):
                raise ApiError(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                )
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        except ApiError as error:
            self._send_json(error.code, error.status())
        except SelectorError as error:
            self._send_json(400, bad_request(str(error)).status())
        except (_ClientGone, ConnectionError):  # the client hung up (gave up waiting)
            self.close_connection = True
        except Exception as error:  # the emulator's own bug: say so, loudly
            traceback.print_exc(file=sys.stderr)
            status = ApiError(500, "InternalError", f"k8s emulator: {error!r}").status()
            self._send_json(500, status)

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return None
        raw = self.rfile.read(length)
        content_type = self.headers.get("Content-Type", "")
        try:
            if "yaml" in content_type:
                return yaml.safe_load(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as error:
            raise bad_request(f"the body of the request could not be decoded: {error}") from error

    def _send_json(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_fault(self, fault: Fault) -> None:
        reason = _FAULT_REASONS.get(fault.status, "InternalError")
        data = json.dumps(
            ApiError(fault.status, reason, f"k8s emulator: scripted {fault.status}").status()
        ).encode()
        self.send_response(fault.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if fault.retry_after is not None:
            self.send_header("Retry-After", str(fault.retry_after))
        self.end_headers()
        self.wfile.write(data)

    def _send_bytes(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, chunks: Iterator[bytes], content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self.wfile.flush()
            for chunk in chunks:
                if chunk:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError) as error:
            raise _ClientGone() from error

    def _flag(self, name: str) -> bool:
        return self.query.get(name, "").lower() in ("true", "1")

    def _int(self, name: str) -> int | None:
        value = self.query.get(name)
        if value in (None, ""):
            return None
        try:
            return int(value)
        except ValueError as error:
            raise bad_request(f"{name}: invalid value {value!r}") from error

    # -- discovery -------------------------------------------------------------------------

    def version(self) -> None:
        self._send_json(200, VERSION)

    def health(self) -> None:
        self._send_bytes(b"ok")

    def api_versions(self) -> None:
        self._send_json(
            200,
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.cluster.port}"}
                ],
            },
        )

    def resource_list(self) -> None:
        resources = [
            {
                "name": kind,
                "singularName": KINDS[kind].lower(),
                "namespaced": True,
                "kind": KINDS[kind],
                "verbs": ["create", "delete", "get", "list", "patch", "watch"],
            }
            for kind in KINDS
            if kind not in GROUP_VERSIONS
        ]
        subresources = [("pods/log", "Pod", ["get"]), ("pods/status", "Pod", ["get"])]
        resources += [
            {"name": name, "singularName": "", "namespaced": True, "kind": kind, "verbs": verbs}
            for name, kind, verbs in subresources
        ]
        resources.append(
            {
                "name": "namespaces",
                "singularName": "namespace",
                "namespaced": False,
                "kind": "Namespace",
                "verbs": ["get", "list"],
            }
        )
        self._send_json(
            200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": resources}
        )

    def list_namespaces(self) -> None:
        items = self.cluster.namespaces()
        for item in items:
            item.pop("kind", None)
            item.pop("apiVersion", None)
        self._send_json(
            200, _list_body("Namespace", "v1", self.cluster.store.resource_version, items)
        )

    def read_namespace(self, namespace: str) -> None:
        self._send_json(200, self.cluster.namespace(namespace))

    # -- objects ---------------------------------------------------------------------------

    def list_all(self, kind: str) -> None:
        self.list_objects(kind=kind, namespace=None)

    def list_objects(self, kind: str, namespace: str | None) -> None:
        label_selector = self.query.get("labelSelector")
        field_selector = self.query.get("fieldSelector")
        if self._flag("watch"):
            self._watch(kind, namespace, label_selector, field_selector)
            return
        version = self.cluster.store.resource_version
        items = self.cluster.list(kind, namespace, label_selector, field_selector)
        for item in items:  # list items carry neither kind nor apiVersion
            item.pop("kind", None)
            item.pop("apiVersion", None)
        self._send_json(200, _list_body(KINDS[kind], api_version(kind), version, items))

    def create_object(self, kind: str, namespace: str) -> None:
        self._send_json(201, self.cluster.create(kind, namespace, self.body))

    def read_object(self, kind: str, namespace: str, name: str) -> None:
        self._send_json(200, self.cluster.read(kind, namespace, name))

    def read_pod_status(self, namespace: str, name: str) -> None:
        self._send_json(200, self.cluster.read("pods", namespace, name))

    def patch_object(self, kind: str, namespace: str, name: str) -> None:
        content_type = self.headers.get("Content-Type", "application/merge-patch+json")
        self._send_json(200, self.cluster.patch(kind, namespace, name, self.body, content_type))

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        grace = self._int("gracePeriodSeconds")
        if grace is None and isinstance(self.body, dict):
            grace = self.body.get("gracePeriodSeconds")
        self._send_json(200, self.cluster.delete(kind, namespace, name, grace))

    def read_log(self, namespace: str, name: str) -> None:
        since_seconds = self._int("sinceSeconds")
        since = None
        if since_seconds is not None:
            if since_seconds <= 0:
                raise bad_request("sinceSeconds: Invalid value: must be greater than 0")
            since = time.time_ns() - since_seconds * 10**9
        elif self.query.get("sinceTime"):
            since = int(parse_rfc3339(self.query["sinceTime"]) * 10**9)
        query = LogQuery(
            timestamps=self._flag("timestamps"),
            since_nanoseconds=since,
            tail_lines=self._int("tailLines"),
            limit_bytes=self._int("limitBytes"),
        )
        result = self.cluster.pod_log(
            namespace,
            name,
            self.query.get("container"),
            query,
            follow=self._flag("follow"),
            previous=self._flag("previous"),
        )
        if isinstance(result, bytes):
            self._send_bytes(result)
        else:
            self._stream(result, "text/plain")

    def _watch(
        self,
        kind: str,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
    ) -> None:
        """Watch events (ADDED, MODIFIED, DELETED) by comparing what the list selects each
        time the store changes."""
        store, cluster = self.cluster.store, self.cluster
        timeout = self._int("timeoutSeconds")
        deadline = time.monotonic() + (timeout if timeout else 3600)
        since = self.query.get("resourceVersion") or "0"
        current = cluster.list(kind, namespace, label_selector, field_selector)

        def key(obj: dict[str, Any]) -> tuple[str, str]:
            return obj["metadata"]["namespace"], obj["metadata"]["name"]

        def events() -> Iterator[bytes]:
            known = {key(obj): obj for obj in current}
            for obj in current:
                if since == "0" or int(obj["metadata"]["resourceVersion"]) > int(since):
                    yield _watch_line("ADDED", obj)
            seen_version = store.resource_version
            while time.monotonic() < deadline and not cluster.stopping.is_set():
                with store.changed:
                    if store.resource_version == seen_version:
                        store.changed.wait(_WATCH_POLL_SECONDS)
                    seen_version = store.resource_version
                latest = {
                    key(o): o for o in cluster.list(kind, namespace, label_selector, field_selector)
                }
                for name, obj in latest.items():
                    if name not in known:
                        yield _watch_line("ADDED", obj)
                    elif (
                        obj["metadata"]["resourceVersion"]
                        != known[name]["metadata"]["resourceVersion"]
                    ):
                        yield _watch_line("MODIFIED", obj)
                for name, obj in known.items():
                    if name not in latest:
                        yield _watch_line("DELETED", obj)
                known = latest

        self._stream(events(), "application/json")


def _watch_line(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def _list_body(
    kind: str, group_version: str, version: str, items: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "kind": f"{kind}List",
        "apiVersion": group_version,
        "metadata": {"resourceVersion": version},
        "items": items,
    }


def _route(
    method: str, pattern: str, handler: Callable[..., None]
) -> tuple[str, re.Pattern[str], Callable[..., None]]:
    return method, re.compile(pattern), handler


_POD = r"^/api/v1/namespaces/(?P<namespace>[^/]+)/pods/(?P<name>[^/]+)"
_ROUTES = [
    _route("GET", r"^/version/?$", ApiHandler.version),
    _route("GET", r"^/(?:healthz|readyz|livez)/?$", ApiHandler.health),
    _route("GET", r"^/api/?$", ApiHandler.api_versions),
    _route("GET", r"^/api/v1/?$", ApiHandler.resource_list),
    _route("GET", r"^/api/v1/namespaces/?$", ApiHandler.list_namespaces),
    _route("GET", r"^/api/v1/namespaces/(?P<namespace>[^/]+)/?$", ApiHandler.read_namespace),
    _route("GET", rf"^/api/v1/(?P<kind>{_KIND_PATTERN})/?$", ApiHandler.list_all),
    _route("GET", rf"{_NAMESPACED}/?$", ApiHandler.list_objects),
    _route("POST", rf"{_NAMESPACED}/?$", ApiHandler.create_object),
    _route("GET", rf"{_POD}/log/?$", ApiHandler.read_log),
    _route("GET", rf"{_POD}/status/?$", ApiHandler.read_pod_status),
    _route("GET", rf"{_NAMESPACED}/(?P<name>[^/]+)/?$", ApiHandler.read_object),
    _route("PATCH", rf"{_NAMESPACED}/(?P<name>[^/]+)/?$", ApiHandler.patch_object),
    _route("DELETE", rf"{_NAMESPACED}/(?P<name>[^/]+)/?$", ApiHandler.delete_object),
    _route("GET", rf"{_NETWORKING}/(?P<kind>networkpolicies)/?$", ApiHandler.list_all),
    _route("GET", rf"{_NETWORKING_NAMESPACED}/?$", ApiHandler.list_objects),
    _route("POST", rf"{_NETWORKING_NAMESPACED}/?$", ApiHandler.create_object),
    _route("GET", rf"{_NETWORKING_NAMESPACED}/(?P<name>[^/]+)/?$", ApiHandler.read_object),
    _route("PATCH", rf"{_NETWORKING_NAMESPACED}/(?P<name>[^/]+)/?$", ApiHandler.patch_object),
    _route("DELETE", rf"{_NETWORKING_NAMESPACED}/(?P<name>[^/]+)/?$", ApiHandler.delete_object),
]  # fmt: skip
