"""The API's error answers as the README gives them: a bad query parameter (wrong type, out of
range) is a malformed request, 400, naming the parameter; a body that breaks the document's
shape is 422; both in the one error shape."""

from __future__ import annotations

import pytest

from tests.plugins.api.conftest import Api

RUN = "/api/v1/tasks/1/runs/1"


@pytest.mark.parametrize(
    ("url", "params", "parameter"),
    [
        (f"{RUN}/logs/train-1-single-0.log", {"lines": "many"}, "lines"),
        (f"{RUN}/logs/train-1-single-0.log", {"lines": 0}, "lines"),
        (f"{RUN}/logs/train-1-single-0.log", {"after": -1}, "after"),
        (f"{RUN}/logs/search", {"q": "x", "limit": 10**9}, "limit"),
        (f"{RUN}/logs/search", {}, "q"),
        (f"{RUN}/metrics/loss", {"points": 1}, "points"),
        ("/api/v1/tasks", {"project": "x" * 65}, "project"),
    ],
)
def test_a_bad_query_parameter_answers_400_naming_it(
    api: Api, url: str, params: dict[str, object], parameter: str
) -> None:
    response = api.client.get(url, params=params, headers=api.as_user("alice"))
    assert response.status_code == 400, response.text
    [problem] = response.json()["problems"]
    assert problem["field"] == parameter
    assert response.json()["detail"] == f"{parameter}: {problem['rule']}"


def test_a_body_that_breaks_its_shape_stays_422(api: Api) -> None:
    response = api.client.post(
        "/api/v1/tasks/1/runs", json={"conf": [], "extra": 1}, headers=api.as_user("alice")
    )
    assert response.status_code == 422, response.text
    assert {problem["field"] for problem in response.json()["problems"]} == {"conf", "extra"}
