"""Request bodies are bounded (413 naming the bound), broken rules are listed up to a bound
and counted, and a body that is not JSON names the body, not a position."""

from __future__ import annotations

import json
import time

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from octotrain.errors import LISTED_PROBLEMS
from plugins.api.body_limit import BodyLimit
from tests.factories import VALID_TASK
from tests.plugins.api.conftest import Api


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse({"size": len(await request.body())})


def _bounded(limit: int) -> TestClient:
    app = Starlette(routes=[Route("/echo", _echo, methods=["POST"])])
    return TestClient(BodyLimit(app, limit=limit))  # type: ignore[arg-type]


def test_a_body_over_the_bound_is_refused_at_once_naming_it() -> None:
    client = _bounded(1024)
    assert client.post("/echo", content=b"x" * 1024).json() == {"size": 1024}
    refused = client.post("/echo", content=b"x" * 1025)
    assert refused.status_code == 413
    assert "larger than 1024 bytes" in refused.json()["detail"]
    assert "OCTOTRAIN_MAX_REQUEST_BYTES" in refused.json()["detail"]


def test_a_chunked_body_is_bounded_too_and_passed_on_whole_below_it() -> None:
    client = _bounded(1024)

    def chunks(count: int) -> object:
        return iter([b"y" * 100] * count)

    assert client.post("/echo", content=chunks(10)).json() == {"size": 1000}  # type: ignore[arg-type]
    assert client.post("/echo", content=chunks(11)).status_code == 413  # type: ignore[arg-type]


def test_uploads_are_not_bounded_here() -> None:
    client = _bounded(1024)
    sent = client.post("/echo", files={"files": ("a.bin", b"z" * 4096)})
    assert sent.status_code == 200 and sent.json()["size"] > 4096


def test_the_api_refuses_a_60_mib_description_at_once(api: Api) -> None:
    body = json.dumps(VALID_TASK | {"description": "d" * (60 * 1024 * 1024)})
    started = time.perf_counter()
    answer = api.client.post("/api/v1/tasks", content=body, headers=api.as_user("alice")
                             | {"content-type": "application/json"})  # fmt: skip
    assert answer.status_code == 413
    assert time.perf_counter() - started < 5  # 18-42 s before the bound


def test_broken_rules_are_listed_up_to_the_bound_and_counted(api: Api) -> None:
    """200,000 undeclared parameters were answered with 40 MB listing every one."""
    parameters = {f"p{n}": 1 for n in range(5000)}
    answer = api.client.post("/api/v1/tasks/check", json=VALID_TASK | {"parameters": parameters},
                             headers=api.as_user("alice"))  # fmt: skip
    body = answer.json()
    assert answer.status_code == 422, body
    assert len(body["problems"]) == LISTED_PROBLEMS
    assert body["problems_total"] >= 5000
    assert body["detail"].endswith(f"; and {body['problems_total'] - LISTED_PROBLEMS} more")
    assert len(answer.content) < 64 * 1024


def test_a_body_that_is_not_json_names_the_body(api: Api) -> None:
    answer = api.client.post("/api/v1/tasks", content=b'{"name": 1,', headers=api.as_user("alice")
                             | {"content-type": "application/json"})  # fmt: skip
    assert answer.status_code == 422
    (problem,) = answer.json()["problems"]
    assert problem["field"] == "body" and problem["rule"].startswith("is not valid JSON: ")
