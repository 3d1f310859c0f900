"""The "Logs" page of a DAG run: rendered for members (by token or by Airflow's session cookie,
as inside the Airflow UI's iframe), escaped, not found for others; its script and style are
served by the plugin itself."""

from __future__ import annotations

from urllib.parse import quote

from hooks.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from octotrain.contracts import dag_id_for
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
    assert missing.status_code == 404
    assert api.client.get("/ui/dags/some_dag/runs/x/logs", headers=alice).status_code == 404


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


def test_the_pages_own_files_are_served_behind_the_login(api: Api) -> None:
    alice = api.as_user("alice")
    script = api.client.get("/ui/static/logs.js", headers=alice)
    assert script.status_code == 200 and "textContent" in script.text
    assert "innerHTML" not in script.text  # log text is never parsed as HTML
    assert api.client.get("/ui/static/pages.css", headers=alice).status_code == 200
    echarts = api.client.get("/ui/static/echarts.min.js", headers=alice)
    assert echarts.status_code == 200 and "echarts" in echarts.text[:2000].lower()
    assert api.client.get("/ui/static/logs.js").status_code == 401
    for name in ("other.js", "..%2Fpages.py", "%2e%2e%2fpages.py"):
        assert api.client.get(f"/ui/static/{name}", headers=alice).status_code == 404, name
