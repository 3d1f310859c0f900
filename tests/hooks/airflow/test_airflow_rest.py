"""Octotrain's Airflow client repeats a request that is safe to repeat while Airflow answers
that its metadata DB failed it, and only then; a trigger repeated after a try that did create
its run gets that run, never a second one."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from hooks.airflow.airflow_rest import REQUEST_RUN_PREFIX, AirflowApiError, AirflowRestClient

DAG_RUNS = "/api/v2/dags/octotrain_task_1/dagRuns"


def database_error() -> httpx.Response:
    """Airflow's answer when a statement failed in its metadata DB (details hidden)."""
    detail = {"reason": "Database error", "statement": "hidden", "orig_error": "hidden"}
    return httpx.Response(500, json={"detail": detail})


def client_answering(answer: Callable[[httpx.Request], httpx.Response]) -> AirflowRestClient:
    client = AirflowRestClient("http://airflow.test")
    client.http = httpx.Client(base_url=client.base_url, transport=httpx.MockTransport(answer))
    return client


def test_a_trigger_whose_try_failed_in_the_database_is_repeated_with_the_same_run_id() -> None:
    posted: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        run_id = json.loads(request.content)["dag_run_id"]
        posted.append(run_id)
        return database_error() if len(posted) < 3 else httpx.Response(200, json={})

    run_id = client_answering(answer).trigger("octotrain_task_1", {"epochs": 3})
    assert posted == [run_id] * 3
    assert run_id.startswith(REQUEST_RUN_PREFIX)


def test_a_repeated_trigger_refused_as_a_duplicate_is_the_run_an_earlier_try_created() -> None:
    created: set[str] = set()

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            found = request.url.path.removeprefix(f"{DAG_RUNS}/") in created
            return httpx.Response(200 if found else 404, json={})
        run_id = json.loads(request.content)["dag_run_id"]
        if run_id in created:
            return httpx.Response(409, json={"detail": {"reason": "Unique constraint violation"}})
        created.add(run_id)  # committed, but the answer is lost in a database error
        return database_error()

    run_id = client_answering(answer).trigger("octotrain_task_1")
    assert created == {run_id}


@pytest.mark.parametrize(
    "failure",
    [
        httpx.Response(500, json={"detail": "Internal Server Error"}),
        httpx.Response(503, json={"detail": {"reason": "Database error"}}),
        httpx.Response(400, json={"detail": "bad conf"}),
    ],
    ids=["500 of another cause", "not a 500", "refused"],
)
def test_other_errors_are_not_repeated(failure: httpx.Response) -> None:
    tries: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        tries.append(request)
        return failure

    with pytest.raises(AirflowApiError):
        client_answering(answer).trigger("octotrain_task_1")
    assert len(tries) == 1


def test_retiring_ends_the_runs_and_asks_for_a_parse_but_deletes_nothing() -> None:
    calls: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(f"{request.method} {request.url.path}")
        if request.url.path == DAG_RUNS:
            return httpx.Response(200, json={"dag_runs": [{"dag_run_id": "manual__1"}]})
        if request.url.path.endswith("/details"):
            return httpx.Response(200, json={"file_token": "token"})
        return httpx.Response(200, json={})

    said = client_answering(answer).retire_dag("octotrain_task_1", reason="deleted by alice")
    assert said.startswith("ended 1 unfinished run(s) of its DAG in Airflow")
    assert f"PATCH {DAG_RUNS}/manual__1" in calls and "PUT /api/v2/parseDagFile/token" in calls
    assert not [call for call in calls if call.startswith("DELETE")]  # it would race the parse
