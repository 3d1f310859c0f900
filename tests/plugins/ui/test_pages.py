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
    path = f"/ui/dags/{dag_id_for(task['id'])}/runs/{quote(run_id)}/logs"
    page = api.client.get(path, headers=alice)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert f'data-api="/api/v1/tasks/{task["id"]}/runs/{catalog_run_id}/logs"' in page.text
    assert "<img" not in page.text and "&lt;img src=x onerror=alert(1)&gt;" in page.text
    assert 'data-live="true"' in page.text
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


def test_the_pages_own_files_are_served_behind_the_login(api: Api) -> None:
    alice = api.as_user("alice")
    script = api.client.get("/ui/static/logs.js", headers=alice)
    assert script.status_code == 200 and "textContent" in script.text
    assert "innerHTML" not in script.text  # log text is never parsed as HTML
    assert api.client.get("/ui/static/pages.css", headers=alice).status_code == 200
    assert api.client.get("/ui/static/logs.js").status_code == 401
    for name in ("other.js", "..%2Fpages.py", "%2e%2e%2fpages.py"):
        assert api.client.get(f"/ui/static/{name}", headers=alice).status_code == 404, name
