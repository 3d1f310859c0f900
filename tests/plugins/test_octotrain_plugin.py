"""The plugin inside Airflow's own api-server app: mounted under /octotrain through the
``airflow.plugins`` entry point, behind Airflow's login (token from ``POST /auth/token``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hooks.storage.catalog import CatalogHook, catalog_for
from hooks.storage.object_store import default_object_store
from octotrain.settings import get_settings
from plugins.octotrain_plugin import OctotrainPlugin
from tests.factories import seed


@pytest.fixture
def airflow_api_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, airflow_metadata_db: None
) -> Iterator[TestClient]:
    from airflow.api_fastapi import app as airflow_app

    passwords = tmp_path / "passwords.json"
    passwords.write_text(json.dumps({"alice": "alice-pw", "bob": "bob-pw"}))
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", "alice:admin,bob:user")
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE", str(passwords))
    monkeypatch.setenv("OCTOTRAIN_STATE_DIR", str(tmp_path / "state"))
    get_settings.cache_clear()
    catalog_for.cache_clear()
    airflow_app.purge_cached_app()
    app = airflow_app.create_app(apps="core")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client
    airflow_app.purge_cached_app()
    catalog_for.cache_clear()
    get_settings.cache_clear()


def login(client: TestClient, username: str, password: str) -> dict[str, str]:
    response = client.post("/auth/token", json={"username": username, "password": password})
    assert response.status_code in (200, 201), response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


def test_plugin_declares_its_app_under_octotrain() -> None:
    [app] = OctotrainPlugin.fastapi_apps
    assert app["url_prefix"] == "/octotrain"


def test_loading_the_plugin_builds_nothing_a_task_process_does_not_serve() -> None:
    """Airflow loads plugins in every task process: the app is built on its first request."""
    import subprocess
    import sys

    probe = (
        "import sys, plugins.octotrain_plugin as plugin; "
        "print('loaded:', sorted(m for m in ('plugins.app', 'octotrain.catalog.models', "
        "'fastapi') if m in sys.modules)); "
        "app = plugin.OctotrainPlugin.fastapi_apps[0]['app']; "
        "print('built:', type(app.built()).__name__, app.built() is app.built())"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    said = [line for line in done.stdout.splitlines() if line.startswith(("loaded:", "built:"))]
    assert said == ["loaded: []", "built: FastAPI True"]


def test_the_api_server_serves_the_plugin_behind_airflows_login(
    airflow_api_server: TestClient,
) -> None:
    client = airflow_api_server
    CatalogHook(get_settings().catalog_url).migrate()
    assert client.get("/octotrain/api/v1/projects").status_code == 401
    alice = login(client, "alice", "alice-pw")
    seed(catalog_for(get_settings().catalog_url), default_object_store())
    projects = client.get("/octotrain/api/v1/projects", headers=alice)
    assert projects.status_code == 200, projects.text
    assert [project["name"] for project in projects.json()["projects"]] == ["demo"]
    bob = login(client, "bob", "bob-pw")
    assert client.get("/octotrain/api/v1/projects", headers=bob).json()["projects"] == []
    for document in ("/octotrain/openapi.json", "/octotrain/docs"):
        assert client.get(document).status_code == 401
    assert client.get("/octotrain/openapi.json", headers=bob).json()["info"]["title"] == "Octotrain"
    page = client.get("/octotrain/docs", headers=bob)
    assert page.status_code == 200 and "/octotrain/openapi.json" in page.text
    assert "cdn" not in page.text.lower()  # Swagger UI from the plugin's own packages
    assets = re.findall(r'(?:src|href)="(/octotrain/ui/static/[^"]+)"', page.text)
    assert len(assets) == 3
    for asset in assets:
        assert client.get(asset, headers=bob).status_code == 200
    # A malformed token is refused as Airflow's own API refuses it (403), not anonymous.
    garbled = {"Authorization": "Bearer not-a-token"}
    assert client.get("/octotrain/api/v1/projects", headers=garbled).status_code == (
        client.get("/api/v2/dags", headers=garbled).status_code
    )


def test_airflow_lists_the_run_tabs_and_the_navigation_entry(
    airflow_api_server: TestClient,
) -> None:
    alice = login(airflow_api_server, "alice", "alice-pw")
    plugins = airflow_api_server.get("/api/v2/plugins", headers=alice).json()["plugins"]
    (ours,) = [plugin for plugin in plugins if plugin["name"] == "octotrain"]
    views = {view["name"]: view for view in ours["external_views"]}
    assert list(views) == ["Metrics", "Resources", "Logs", "Training", "Octotrain docs"]
    manual = views["Octotrain docs"]  # in Airflow's own Docs menu
    assert (manual["category"], manual["href"]) == ("docs", "/octotrain/manual/")
    for name in ("metrics", "resources", "logs"):
        tab = views[name.title()]
        assert tab["destination"] == "dag_run" and tab["url_route"] == f"octotrain-{name}"
        assert tab["href"] == f"/octotrain/ui/dags/{{DAG_ID}}/runs/{{RUN_ID}}/{name}"
    console = views["Training"]  # a label Airflow's 56 px navigation button shows whole
    assert console["destination"] == "nav" and console["url_route"] == "octotrain-tasks"
    assert console["href"] == "/octotrain/ui/tasks"
    # an icon per theme, relative to Airflow's <base href>, served by the plugin behind the login
    for field, theme in (("icon", "light"), ("icon_dark_mode", "dark")):
        assert console[field] == f"octotrain/ui/static/nav_icon_{theme}.svg"
        assert airflow_api_server.get(f"/{console[field]}").status_code == 401
        icon = airflow_api_server.get(f"/{console[field]}", headers=alice)
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
        assert icon.text.startswith("<svg") and "<title>Training</title>" in icon.text
