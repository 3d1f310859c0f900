"""The plugin API in-process (Starlette's test client) on a catalog of its own per module and
backend, with Airflow tokens for an admin (alice), a member of project ``other`` (bob) and a
user in no project (carol)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from airflow.api_fastapi.app import create_auth_manager
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
from fastapi.testclient import TestClient

from hooks.storage.catalog import CatalogHook, catalog_for
from hooks.storage.local_store import LocalFolderStore
from octotrain.settings import get_settings
from plugins.app import create_app
from tests.conftest import BACKENDS, postgres_database
from tests.factories import build_rule_catalog

ROLES = {"alice": "admin", "bob": "user", "carol": "user"}


def token(username: str) -> str:
    role = ROLES[username]
    return create_auth_manager().generate_jwt(SimpleAuthManagerUser(username=username, role=role))


def auth(username: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(username)}"}


@dataclass
class Api:
    client: TestClient
    store: LocalFolderStore

    def as_user(self, username: str) -> dict[str, str]:
        return auth(username)


@pytest.fixture(scope="module", params=BACKENDS)
def api(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    airflow_metadata_db: None,
) -> Iterator[Api]:
    create_auth_manager()  # as Airflow's api-server does before it serves plugin apps
    root = tmp_path_factory.mktemp(f"api-{request.param}")
    urls: Iterator[str] = (
        iter([f"sqlite:///{root / 'catalog.db'}"])
        if request.param == "sqlite"
        else postgres_database()
    )
    url = next(urls)
    hook = CatalogHook(url)
    hook.migrate()
    store = LocalFolderStore(root / "objects")
    build_rule_catalog(hook, store, root)
    hook.dispose()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OCTOTRAIN_STATE_DIR", str(root / "state"))
        patch.setenv("OCTOTRAIN_CATALOG_URL", url)
        patch.setenv("OCTOTRAIN_OBJECT_STORE_URL", f"file://{root / 'objects'}")
        get_settings.cache_clear()
        catalog_for.cache_clear()
        with TestClient(create_app(), base_url="http://127.0.0.1") as client:
            yield Api(client=client, store=store)
        catalog_for(url).dispose()
        catalog_for.cache_clear()
        get_settings.cache_clear()
    next(urls, None)
