"""The plugin API's error answers, one shape for all of them:

``{"detail": "<what went wrong>", "problems": [{"field": "...", "rule": "..."}], ...}``

``problems`` lists every broken rule of a document (422); a refused delete also lists its
``referrers`` (409). FastAPI's own request validation errors are answered in the same shape:
400 when a query parameter is bad (docs/reference/rest-api.md: "a bad query parameter"), 422
otherwise.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from octotrain.catalog.access import Forbidden
from octotrain.documents import rule_in_words
from octotrain.errors import (
    Conflict,
    FieldProblem,
    InvalidInput,
    InvalidQuery,
    InvalidTrigger,
    NotFound,
    StillReferenced,
)
from octotrain.storage import ObjectStoreError


class ProblemView(BaseModel):
    field: str
    rule: str


class ErrorView(BaseModel):
    detail: str
    problems: list[ProblemView] = []
    # How many rules were broken: ``problems`` lists the first 100 of them.
    problems_total: int | None = None
    referrers: list[str] = []


# Documented on every route (the API's OpenAPI document lists what each may answer).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorView, "description": "A query parameter or a run's conf breaks a rule"},
    413: {"model": ErrorView, "description": "The body is over OCTOTRAIN_MAX_REQUEST_BYTES"},
    401: {"model": ErrorView, "description": "No or an expired Airflow token"},
    403: {"model": ErrorView, "description": "Only administrators may do this"},
    404: {"model": ErrorView, "description": "Not found, or in a project you are not in"},
    409: {"model": ErrorView, "description": "Still referenced, or taken meanwhile"},
    422: {"model": ErrorView, "description": "Broken rules, each with its field"},
}


def _answer(status: int, detail: str, **extra: Any) -> JSONResponse:
    return JSONResponse(status_code=status, content={"detail": detail, **extra})


def _problems(problems: list[FieldProblem]) -> list[dict[str, str]]:
    return [{"field": problem.field, "rule": problem.rule} for problem in problems]


def _judged(status: int, error: InvalidInput) -> JSONResponse:
    """The broken rules, the first ``LISTED_PROBLEMS`` of them, and how many there were."""
    return _answer(status, str(error), problems=_problems(error.listed),
                   problems_total=len(error.problems))  # fmt: skip


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(InvalidInput)
    async def invalid(_request: Request, error: InvalidInput) -> JSONResponse:
        return _judged(422, error)

    @app.exception_handler(InvalidQuery)
    async def bad_query(_request: Request, error: InvalidQuery) -> JSONResponse:
        return _judged(400, error)

    @app.exception_handler(InvalidTrigger)
    async def bad_trigger(_request: Request, error: InvalidTrigger) -> JSONResponse:
        return _judged(400, error)

    @app.exception_handler(NotFound)
    async def not_found(_request: Request, error: NotFound) -> JSONResponse:
        return _answer(404, str(error))

    @app.exception_handler(Forbidden)
    async def forbidden(_request: Request, error: Forbidden) -> JSONResponse:
        return _answer(403, str(error))

    @app.exception_handler(Conflict)
    async def conflict(_request: Request, error: Conflict) -> JSONResponse:
        referrers = error.referrers if isinstance(error, StillReferenced) else []
        return _answer(409, str(error), referrers=referrers)

    @app.exception_handler(ObjectStoreError)
    async def store_failed(_request: Request, error: ObjectStoreError) -> JSONResponse:
        return _answer(503, f"the object store failed: {error}")

    @app.exception_handler(RequestValidationError)
    async def malformed(_request: Request, error: RequestValidationError) -> JSONResponse:
        problems = [_malformed(item) for item in error.errors()]
        detail = "; ".join(f"{item['field']}: {item['rule']}" for item in problems)
        # A bad query parameter makes the request malformed (400, as InvalidQuery); a body or
        # path that breaks its shape is judged like a document (422).
        in_query = any(item["loc"][:1] == ("query",) for item in error.errors())
        return _answer(400 if in_query else 422, detail, problems=problems)


def _malformed(item: dict[str, Any]) -> dict[str, str]:
    """One of FastAPI's validation errors as a problem; a body that is not JSON at all (its
    location is the position of the error) names the body and where it broke."""
    if item.get("type") == "json_invalid":
        position = item["loc"][-1]
        reason = (item.get("ctx") or {}).get("error", "")
        return {"field": "body", "rule": f"is not valid JSON: {reason} at character {position}"}
    rule = rule_in_words(item["type"], item.get("ctx") or {}, item.get("input"), item["msg"])
    return {"field": _parameter(item["loc"]), "rule": rule}


def _parameter(location: tuple[int | str, ...]) -> str:
    """A query parameter by its name (``lines``), a body field by its path in the body
    (``conf``), a path parameter as ``path.<name>``."""
    parts = location[1:] if location[:1] in (("query",), ("body",)) else location
    return ".".join(str(part) for part in parts) or "body"
