"""The "Logs" page of a DAG run: rendered for members (by token or by Airflow's session cookie,
as inside the Airflow UI's iframe), escaped, not found for others; its script and style are
served by the plugin itself."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from octotrain.contracts import dag_id_for
from plugins.app import create_app
from plugins.ui.pages import run_duration, usage_amount
from tests.factories import VALID_TASK
from tests.plugins.api.conftest import Api, token


def test_the_logs_page_of_a_run(api: Api) -> None:
    alice = api.as_user("alice")
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": "page-task"}, headers=alice
    ).json()
    run_id = "manual__<img src=x onerror=alert(1)>"
    with default_catalog().session() as session:
        run = Run(task_id=task["id"], airflow_run_id=run_id, state=RunState.RUNNING, node_count=1)
        session.add(run)
        session.flush()
        catalog_run_id = run.id
    for tab, data_api in (("logs", "/logs"), ("metrics", ""), ("resources", "")):
        page = api.client.get(f"/ui/dags/{dag_id_for(task['id'])}/runs/{quote(run_id)}/{tab}",
                              headers=alice)  # fmt: skip
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert f'data-api="/api/v1/tasks/{task["id"]}/runs/{catalog_run_id}{data_api}"' in page.text
        assert "<img" not in page.text and "&lt;img src=x onerror=alert(1)&gt;" in page.text
        assert 'data-live="true"' in page.text
    path = f"/ui/dags/{dag_id_for(task['id'])}/runs/{quote(run_id)}/logs"
    api.client.cookies.set("_token", token("alice"))
    try:
        assert api.client.get(path).status_code == 200  # the session cookie of Airflow's UI
    finally:
        api.client.cookies.clear()
    assert api.client.get(path).status_code == 401
    assert api.client.get(path, headers=api.as_user("bob")).status_code == 404
    missing = api.client.get(f"/ui/dags/{dag_id_for(task['id'])}/runs/nope/logs", headers=alice)
    assert missing.status_code == 404 and "has no run nope yet" in missing.text
    assert "does not exist" in api.client.get(path, headers=api.as_user("bob")).text


def test_a_tab_of_a_run_of_another_dag_is_a_page_that_says_so(api: Api) -> None:
    """Airflow shows the plugin's tabs on the runs of every DAG: a page, not the API's JSON."""
    for tab in ("metrics", "resources", "logs"):
        page = api.client.get(
            f"/ui/dags/octotrain_data_caches/runs/manual__1/{tab}", headers=api.as_user("alice")
        )
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
        assert "<h1>This DAG run is not an Octotrain training run</h1>" in page.text
        assert '<a class="button" href="/plugin/octotrain-tasks" target="_top">' in page.text


def test_links_into_airflow_are_under_airflows_root_and_for_the_top_window(api: Api) -> None:
    """Behind a base URL with a path, the plugin's root is Airflow's root + /octotrain; links
    into Airflow's pages are under Airflow's root, targeting the top window (``common.js``
    hands a click on them to Airflow's router)."""
    alice = api.as_user("alice")
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": "rooted-task"}, headers=alice
    ).json()
    dag_id = dag_id_for(task["id"])
    with default_catalog().session() as session:
        session.add(Run(task_id=task["id"], airflow_run_id="manual__1", state=RunState.SUCCESS,
                        node_count=1))  # fmt: skip
    with TestClient(
        create_app(), base_url="http://127.0.0.1", root_path="/airflow/octotrain"
    ) as client:
        listed = client.get("/ui/tasks", params={"q": "rooted"}, headers=alice).text
        assert f'href="/airflow/dags/{dag_id}" target="_top">DAG</a>' in listed
        assert (
            f'href="/airflow/dags/{dag_id}/runs/manual__1/plugin/octotrain-metrics" target="_top"'
            in listed
        )
        # common.js learns where the console's view is inside Airflow: a link to a console
        # page gets that address (a Ctrl-click or "Copy link" opens it inside Airflow)
        assert (
            '<script src="/airflow/octotrain/ui/static/common.js" data-root="/airflow/octotrain" '
            'data-console="/airflow/plugin/octotrain-tasks">' in listed
        )
        detail = client.get(f"/ui/tasks/{task['id']}", headers=alice).text
        assert 'data-airflow="/airflow"' in detail
        assert f'href="/airflow/dags/{dag_id}" target="_top">{dag_id}</a>' in detail
        other = client.get("/ui/dags/octotrain_data_caches/runs/x/logs", headers=alice).text
        assert 'href="/airflow/plugin/octotrain-tasks" target="_top"' in other


def test_the_training_tasks_page_lists_the_users_tasks_and_their_runs(api: Api) -> None:
    alice, bob = api.as_user("alice"), api.as_user("bob")
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": "listed-task"}, headers=alice
    ).json()
    with default_catalog().session() as session:
        session.add(Run(task_id=task["id"], airflow_run_id="manual__2026-12-02T10:00:00+00:00",
                        state=RunState.FAILED, node_count=1))  # fmt: skip
    page = api.client.get("/ui/tasks", headers=alice)
    assert page.status_code == 200
    assert "Project demo" in page.text and "listed-task" in page.text
    run_page = f"/dags/{dag_id_for(task['id'])}/runs/manual__2026-12-02T10%3A00%3A00%2B00%3A00"
    for tab in ("metrics", "resources", "logs"):
        assert f'href="{run_page}/plugin/octotrain-{tab}"' in page.text
    assert "listed-task" not in api.client.get("/ui/tasks", headers=bob).text
    assert api.client.get("/ui/tasks").status_code == 401


def test_the_list_filters_by_last_run_status_and_name(api: Api) -> None:
    alice = api.as_user("alice")
    for name in ("filter-alpha", "filter-beta"):
        api.client.post("/api/v1/tasks", json=VALID_TASK | {"name": name}, headers=alice)
    listed = api.client.get("/ui/tasks", params={"q": "ALPHA"}, headers=alice).text
    assert "filter-alpha" in listed and "filter-beta" not in listed
    never = api.client.get("/ui/tasks", params={"status": "never", "q": "filter"}, headers=alice)
    assert "filter-alpha" in never.text and "filter-beta" in never.text
    failed = api.client.get("/ui/tasks", params={"status": "failed", "q": "filter"}, headers=alice)
    assert "filter-alpha" not in failed.text
    anything = api.client.get("/ui/tasks", params={"status": "", "q": "filter"}, headers=alice)
    assert "filter-alpha" in anything.text  # the form's "any status"
    bogus = api.client.get("/ui/tasks", params={"status": "bogus"}, headers=alice)
    assert bogus.status_code == 400 and bogus.json()["problems"][0]["field"] == "status"
    assert 'href="/ui/tasks/new?project=demo"' in listed


def test_the_new_task_form_offers_only_what_the_rules_accept(api: Api) -> None:
    import json

    alice = api.as_user("alice")
    page = api.client.get("/ui/tasks/new", params={"project": "demo"}, headers=alice)
    assert page.status_code == 200
    embedded = re.search(r'<script type="application/json" id="choices">(.*?)</script>', page.text)
    choices = json.loads(embedded.group(1))
    datasets = {item["name"]: item for item in choices["datasets"]}
    assert "raw" not in datasets  # unannotated
    assert datasets["pending"]["versions"] == []  # importing / failed versions are not offered
    assert datasets["imported"]["versions"] == ["v1"] and not datasets["imported"]["published"]
    assert {spec["kind"] for spec in choices["resource_specs"]} >= {"cce", "modelarts"}
    algorithm = next(a for a in choices["algorithms"] if a["name"] == "linear-regression-numpy")
    assert {p["name"] for p in algorithm["parameters"]} >= {"epochs"}
    assert api.client.get("/ui/tasks/new", params={"project": "other"},
                          headers=api.as_user("carol")).status_code == 404  # fmt: skip


def test_the_task_page_shows_the_task_and_is_only_for_members(api: Api) -> None:
    alice = api.as_user("alice")
    task = api.client.post(
        "/api/v1/tasks",
        json=VALID_TASK | {"name": "detail-<b>", "schedule": "@daily"},
        headers=alice,
    )
    assert task.status_code == 422  # '<' is not a name character: nothing to show
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": "detail-task", "schedule": "@daily"},
        headers=alice,
    ).json()  # fmt: skip
    page = api.client.get(f"/ui/tasks/{task['id']}", headers=alice)
    assert (
        page.status_code == 200
        and "detail-task" in page.text
        and "<code>@daily</code>" in page.text
    )
    edit = api.client.get(f"/ui/tasks/{task['id']}/edit", headers=alice)
    assert edit.status_code == 200 and '"name": "detail-task"' in edit.text
    assert api.client.get(f"/ui/tasks/{task['id']}", headers=api.as_user("bob")).status_code == 404


def test_the_pages_own_files_are_served_behind_the_login(api: Api) -> None:
    alice = api.as_user("alice")
    for name in ("common.js", "logs.js", "charts.js", "task_form.js", "task_detail.js"):
        script = api.client.get(f"/ui/static/{name}", headers=alice)
        assert script.status_code == 200 and "textContent" in script.text
        assert "innerHTML" not in script.text  # catalog text is never parsed as HTML
        # Airflow's iframe sandbox (no allow-modals) blocks them: the pages have dialogs
        assert not re.search(r"\b(alert|confirm|prompt)\(", script.text), name
    assert api.client.get("/ui/static/pages.css", headers=alice).status_code == 200
    echarts = api.client.get("/ui/static/echarts.min.js", headers=alice)
    assert echarts.status_code == 200 and "echarts" in echarts.text[:2000].lower()
    assert api.client.get("/ui/static/logs.js").status_code == 401
    for name in ("other.js", "..%2Fpages.py", "%2e%2e%2fpages.py"):
        assert api.client.get(f"/ui/static/{name}", headers=alice).status_code == 404, name


@pytest.mark.parametrize(
    ("hours", "unit", "shown"),
    [
        (4.0, "node-hours", "4.00 node-hours"),
        (0.5, "h", "0.50 h"),
        (0.0, "GPU-hours", "0.00 GPU-hours"),
        (0.04, "node-hours", "2.4 node-minutes"),  # not "0.04", and never "0.00"
        (0.004, "CPU-hours", "14 CPU-seconds"),
        (0.02, "h", "1.2 min"),
        (0.0001, "", "0 s"),
        (0.02, "", "1.2 min"),
    ],
)
def test_a_short_run_s_usage_reads_in_minutes_or_seconds(
    hours: float, unit: str, shown: str
) -> None:
    assert usage_amount(hours, unit) == shown


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0, "0 s"), (42, "42 s"), (119, "119 s"), (180, "3 min"),
                           (7500, "2 h 5 min")],
)  # fmt: skip
def test_a_run_s_duration_reads_as_the_task_page_says_it(seconds: int, shown: str) -> None:
    start = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
    assert run_duration(start, start + timedelta(seconds=seconds)) == shown
