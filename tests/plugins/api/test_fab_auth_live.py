"""The plugin under the FAB auth manager (production's), against a real Airflow api-server
started by the test, with Airflow's metadata DB and the catalog on SQLite, or both on
PostgreSQL: FAB users and roles decide who sees which project and who may start runs, through
the plugin's REST API with FAB's tokens and through the pages with the cookie of FAB's login.

Users: ``ann`` (Admin, made with ``airflow users create`` as the README says), and, made through
FAB's users API, ``uma`` (User), ``oscar`` (Op) and ``vic`` (Viewer), members of ``demo`` only;
the project ``secret`` has no members.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from cli.demo import DemoSeed
from hooks.storage.catalog import CatalogHook
from octotrain.contracts import dag_id_for
from octotrain.storage import ObjectStore
from tests.conftest import BACKENDS, postgres_database
from tests.live_airflow import HTTP_SECONDS, LiveAirflow, demo_airflow

FAB_AUTH_MANAGER = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"
PLUGIN = "/octotrain/api/v1"
ADMIN = "ann"
MEMBERS = {"uma": "User", "oscar": "Op", "vic": "Viewer"}


@dataclass
class Fab:
    """An api-server with the FAB auth manager, its users (password: ``pw-<name>``) and the
    demo task; ``bearer`` remembers one token per user."""

    server: LiveAirflow
    task_id: int
    tokens: dict[str, str] = field(default_factory=dict)

    def bearer(self, username: str) -> dict[str, str]:
        if username not in self.tokens:
            answer = httpx.post(
                f"{self.server.url}/auth/token",
                json={"username": username, "password": f"pw-{username}"},
                timeout=HTTP_SECONDS,
            )
            assert answer.status_code == 201, answer.text
            self.tokens[username] = answer.json()["access_token"]
        return {"Authorization": f"Bearer {self.tokens[username]}"}

    def plugin(
        self, method: str, path: str, username: str | None, json: object = None
    ) -> httpx.Response:
        """The plugin's answer to ``username`` (with a token of theirs), or to no one."""
        headers = self.bearer(username) if username else {}
        return httpx.request(
            method,
            f"{self.server.url}{PLUGIN}{path}",
            headers=headers,
            json=json,
            timeout=HTTP_SECONDS,
        )


@pytest.fixture(scope="module", params=BACKENDS)
def fab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fab]:
    """One api-server per backend (FAB's users and the projects as the module docstring says);
    Airflow's metadata DB and the catalog on SQLite, or both on PostgreSQL (each its own DB)."""
    root = tmp_path_factory.mktemp(f"live-fab-{request.param}")
    databases = [postgres_database() for _ in range(2)] if request.param == "postgresql" else []
    metadata_url, catalog_url = (next(db) for db in databases) if databases else (None, None)
    settings = {
        "OCTOTRAIN_STATE_DIR": str(root / "state"),
        "AIRFLOW__CORE__AUTH_MANAGER": FAB_AUTH_MANAGER,
    }
    if catalog_url:
        settings["OCTOTRAIN_CATALOG_URL"] = catalog_url

    def demo_task(_catalog: CatalogHook, _store: ObjectStore, demo: DemoSeed) -> int:
        return demo.task_id

    with demo_airflow(root, settings, demo_task, metadata_url=metadata_url) as (server, task_id):
        assert task_id is not None
        made = server.airflow(
            "users", "create", "--username", ADMIN, "--password", f"pw-{ADMIN}", "--role",
            "Admin", "--firstname", "Ann", "--lastname", "Admin", "--email", "ann@example.org",
        )  # fmt: skip
        assert made.returncode == 0, made.stderr[-3000:]
        fab = Fab(server, task_id)
        for username, role in MEMBERS.items():
            user = {
                "username": username,
                "password": f"pw-{username}",
                "email": f"{username}@example.org",
                "first_name": username.title(),
                "last_name": role,
                "roles": [{"name": role}],
            }
            answer = httpx.post(
                f"{server.url}/auth/fab/v1/users",
                json=user,
                headers=fab.bearer(ADMIN),
                timeout=HTTP_SECONDS,
            )
            assert answer.status_code == 200, answer.text
            member = fab.plugin(
                "POST", "/projects/demo/members", ADMIN, json={"username": username}
            )
            assert member.status_code == 200, member.text
        secret = fab.plugin("POST", "/projects", ADMIN, json={"name": "secret"})
        assert secret.status_code == 201, secret.text
        yield fab
    for database in databases:
        next(database, None)  # drops it


def project_names(fab: Fab, username: str) -> list[str]:
    answer = fab.plugin("GET", "/projects", username)
    assert answer.status_code == 200, answer.text
    return sorted(project["name"] for project in answer.json()["projects"])


def test_without_a_token_the_api_and_the_pages_answer_401(fab: Fab) -> None:
    assert fab.plugin("GET", "/projects", None).status_code == 401
    assert fab.plugin("POST", f"/tasks/{fab.task_id}/runs", None, json={}).status_code == 401
    page = httpx.get(f"{fab.server.url}/octotrain/ui/tasks", timeout=HTTP_SECONDS)
    assert page.status_code == 401


def test_a_token_of_fabs_auth_token_is_a_bearer_token_and_a_wrong_password_gets_none(
    fab: Fab,
) -> None:
    wrong = httpx.post(
        f"{fab.server.url}/auth/token",
        json={"username": "uma", "password": "nope"},
        timeout=HTTP_SECONDS,
    )
    assert wrong.status_code == 401
    answer = httpx.get(
        f"{fab.server.url}{PLUGIN}/projects", headers=fab.bearer("uma"), timeout=HTTP_SECONDS
    )
    assert answer.status_code == 200, answer.text


def test_an_fab_admin_sees_every_project_and_manages_them(fab: Fab) -> None:
    assert project_names(fab, ADMIN) == ["demo", "secret"]
    made = fab.plugin("POST", "/projects", ADMIN, json={"name": "made-by-ann"})
    assert made.status_code == 201, made.text
    assert project_names(fab, ADMIN) == ["demo", "made-by-ann", "secret"]
    assert fab.plugin("DELETE", "/projects/made-by-ann", ADMIN).status_code == 204
    assert project_names(fab, ADMIN) == ["demo", "secret"]


@pytest.mark.parametrize("username", sorted(MEMBERS))
def test_other_roles_see_only_their_project_and_may_not_manage_projects(
    fab: Fab, username: str
) -> None:
    """Op included: it may read Airflow's configuration, which makes no one an admin here."""
    assert project_names(fab, username) == ["demo"]
    hidden = fab.plugin("GET", "/projects/secret", username)
    assert hidden.status_code == 404 and hidden.json()["detail"] == "project 'secret' not found"
    tasks = fab.plugin("GET", "/tasks", username).json()["tasks"]
    assert {task["project"] for task in tasks} == {"demo"}
    refused = fab.plugin("POST", "/projects", username, json={"name": f"by-{username}"})
    assert refused.status_code == 403
    assert refused.json()["detail"] == "only administrators may create projects"
    joined = fab.plugin("POST", "/projects/secret/members", username, json={"username": username})
    assert joined.status_code == 403
    assert project_names(fab, ADMIN) == ["demo", "secret"]


@pytest.mark.parametrize("username", [ADMIN, "uma", "oscar"])
def test_roles_allowed_to_trigger_dags_start_runs_as_themselves(fab: Fab, username: str) -> None:
    started = fab.plugin("POST", f"/tasks/{fab.task_id}/runs", username, json={"conf": {}})
    assert started.status_code == 201, started.text
    run = started.json()
    assert run["created"] is True and run["run"]["triggered_by"] == username
    airflow_run = httpx.get(
        f"{fab.server.url}/api/v2/dags/{run['dag_id']}/dagRuns/{run['dag_run_id']}",
        headers=fab.bearer(ADMIN),
        timeout=HTTP_SECONDS,
    )
    assert airflow_run.status_code == 200, airflow_run.text
    assert airflow_run.json()["triggering_user_name"] == username


def test_a_viewer_may_not_trigger_and_starts_nothing(fab: Fab) -> None:
    runs = f"/tasks/{fab.task_id}/runs"
    before = fab.plugin("GET", runs, "vic").json()
    refused = fab.plugin("POST", runs, "vic", json={"request_id": "viewer-1"})
    assert refused.status_code == 403, refused.text
    dag_id = dag_id_for(fab.task_id)
    assert refused.json()["detail"] == f"you may not trigger runs of DAG {dag_id} in Airflow"
    assert fab.plugin("GET", runs, "vic").json() == before
    airflow_run = httpx.get(
        f"{fab.server.url}/api/v2/dags/{dag_id}/dagRuns/request__viewer-1",
        headers=fab.bearer(ADMIN),
        timeout=HTTP_SECONDS,
    )
    assert airflow_run.status_code == 404


def test_the_cookie_of_fabs_login_form_opens_the_pages_and_the_api(fab: Fab) -> None:
    with httpx.Client(base_url=fab.server.url, timeout=HTTP_SECONDS) as browser:
        form = browser.get("/auth/login/")
        assert form.status_code == 200, form.text
        csrf = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', form.text)
        assert csrf, form.text[-2000:]
        login = browser.post(
            "/auth/login/",
            data={"username": "uma", "password": "pw-uma", "csrf_token": csrf.group(1)},
        )
        assert login.status_code in (302, 303), login.text
        assert browser.cookies.get("_token")
        page = browser.get("/octotrain/ui/tasks")
        assert page.status_code == 200 and "<html" in page.text.lower()
        projects = browser.get(f"{PLUGIN}/projects")
        assert projects.status_code == 200
        assert [project["name"] for project in projects.json()["projects"]] == ["demo"]
