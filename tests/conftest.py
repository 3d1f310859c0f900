"""Shared fixtures: a catalog on SQLite and on PostgreSQL, a local object store, settings.

Airflow reads its configuration once per process, so this file points it at a private
AIRFLOW_HOME before anything imports Airflow. Tests that need a whole Airflow installation
(metadata DB, dag.test) run it in a subprocess (tests/e2e).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

_AIRFLOW_HOME = tempfile.mkdtemp(prefix="octotrain-test-airflow-")
_MADE_BY = os.getpid()


def _remove_airflow_home() -> None:
    """At the test process's exit (each run left one behind before); not at the exit of a
    child forked from it, whose parent still uses it."""
    if os.getpid() == _MADE_BY:
        shutil.rmtree(_AIRFLOW_HOME, ignore_errors=True)


atexit.register(_remove_airflow_home)
os.environ["AIRFLOW_HOME"] = _AIRFLOW_HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"
# The tests' runs ask for cluster-sized specs (2 nodes of 2 cores) on machines of 2 cores; the
# local launcher's admission would refuse them there (tests/hooks/test_local_admission.py and
# bench.admission hold it to this machine's size themselves).
os.environ.setdefault("OCTOTRAIN_LOCAL_CORES", "64")
# Long enough for HS512, so that tokens made by the tests are signed as in production.
os.environ["AIRFLOW__API_AUTH__JWT_SECRET"] = "octotrain-tests-" + "0123456789abcdef" * 4

import pytest  # noqa: E402
import sqlalchemy  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

from hooks.storage.catalog import CatalogHook  # noqa: E402
from hooks.storage.local_store import LocalFolderStore  # noqa: E402
from octotrain.settings import get_settings  # noqa: E402
from tests.factories import build_rule_catalog  # noqa: E402
from tests.k8s_control_plane import (  # noqa: E402
    ControlPlane,
    ControlPlaneFailed,
    control_plane,
)
from tests.radosgw import ClusterFailed, S3Endpoint, pids_in, radosgw_cluster  # noqa: E402

POSTGRES_ADMIN_URL = os.environ.get(
    "OCTOTRAIN_TEST_POSTGRES_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
)


S3_CONNECTION = "s3_test"  # the Airflow connection of the s3_server fixture's user
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database, dropped afterwards; yields its URL."""
    name = f"octotrain_test_{uuid.uuid4().hex[:12]}"
    admin = sqlalchemy.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    except sqlalchemy.exc.OperationalError as error:
        admin.dispose()
        pytest.fail(f"PostgreSQL on 127.0.0.1:5432 is required for this test: {error}")
    url = POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@pytest.fixture(params=BACKENDS)
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The catalog URL, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'catalog.db'}"
    else:
        yield from postgres_database()


@pytest.fixture(scope="module", params=BACKENDS)
def rule_catalog(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[CatalogHook, LocalFolderStore]]:
    """One catalog per module and backend with ``tests.factories.build_rule_catalog``; tests
    use it through ``rule_session``, which rolls back whatever a test changes."""
    root = tmp_path_factory.mktemp(f"rules-{request.param}")
    if request.param == "sqlite":
        urls: Iterator[str] = iter([f"sqlite:///{root / 'catalog.db'}"])
    else:
        urls = postgres_database()
    hook = CatalogHook(next(urls))
    hook.migrate()
    store = LocalFolderStore(root / "objects")
    build_rule_catalog(hook, store, root)
    yield hook, store
    hook.dispose()
    next(urls, None)


@pytest.fixture
def rule_store(rule_catalog: tuple[CatalogHook, LocalFolderStore]) -> LocalFolderStore:
    """The object store of the rule catalog."""
    return rule_catalog[1]


@pytest.fixture
def rule_session(rule_catalog: tuple[CatalogHook, LocalFolderStore]) -> Iterator[Session]:
    """A session on the rule catalog that is rolled back after the test."""
    hook, _store = rule_catalog
    with hook.engine.connect() as connection:
        transaction = connection.begin()
        session = Session(bind=connection)
        try:
            yield session
        finally:
            session.rollback()  # also runs the object-store cleanups of what the test wrote
            session.close()
            if transaction.is_active:
                transaction.rollback()


@pytest.fixture
def catalog(catalog_url: str) -> Iterator[CatalogHook]:
    hook = CatalogHook(catalog_url)
    hook.migrate()
    yield hook
    hook.dispose()


@pytest.fixture
def store(tmp_path: Path) -> LocalFolderStore:
    return LocalFolderStore(tmp_path / "objects")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Endpoint]:
    """A real S3 server (Ceph's radosgw, ``tests/radosgw.py``) on 127.0.0.1 for the whole
    session, with an Airflow connection ``s3_test`` for its user; yields its endpoint. Without
    Ceph's packages the tests that need it fail, naming them (``.ci/run`` installs them)."""
    folder = tmp_path_factory.mktemp("radosgw")
    cluster = ExitStack()
    try:
        endpoint = cluster.enter_context(radosgw_cluster(folder))
    except ClusterFailed as error:
        pytest.fail(f"a real S3 server is required for this test: {error}")
    with cluster:
        os.environ[f"AIRFLOW_CONN_{S3_CONNECTION.upper()}"] = json.dumps(
            {"conn_type": "aws", "login": endpoint.access_key, "password": endpoint.secret_key,
             "extra": {"endpoint_url": endpoint.url, "region_name": endpoint.region}}
        )  # fmt: skip
        yield endpoint
    left = pids_in(folder)
    assert not left, f"the S3 server's processes outlived it: {left}"


@pytest.fixture(scope="session")
def k8s_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A real Kubernetes control plane (``tests/k8s_control_plane.py``: etcd, kube-apiserver,
    kube-scheduler, kube-controller-manager built from Go modules) on 127.0.0.1 for the whole
    session; yields where it answers, with its admin's certificate. It fails, naming the part
    that failed, where it cannot be built or started."""
    folder = tmp_path_factory.mktemp("k8s")
    plane = ExitStack()
    try:
        started = plane.enter_context(control_plane(folder))
    except ControlPlaneFailed as error:
        pytest.fail(f"a real Kubernetes control plane is required for this test: {error}")
    with plane:
        yield started


@pytest.fixture
def s3_bucket(s3_server: S3Endpoint) -> str:
    """A new, empty bucket on the S3 server; its object-store URL."""
    return new_s3_bucket(s3_server)


def new_s3_bucket(s3_server: S3Endpoint) -> str:
    """Create an empty bucket on the S3 server; return its object-store URL."""
    name = f"octotrain-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=name)
    return f"s3://{name}/octotrain?conn_id={S3_CONNECTION}"


@pytest.fixture
def octotrain_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, catalog_url: str
) -> Iterator[Path]:
    """Point Octotrain's settings at a private state folder and the test's catalog."""
    state = tmp_path / "state"
    monkeypatch.setenv("OCTOTRAIN_STATE_DIR", str(state))
    monkeypatch.setenv("OCTOTRAIN_CATALOG_URL", catalog_url)
    get_settings.cache_clear()
    yield state
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def airflow_metadata_db() -> None:
    """Migrate this process's Airflow metadata DB (SQLite in the private AIRFLOW_HOME), which
    Airflow's token checks read (revoked tokens)."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
