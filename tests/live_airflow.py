"""A real Airflow api-server for tests that talk to Airflow over HTTP: its own AIRFLOW_HOME,
metadata DB and catalog, Octotrain's DAGs serialized, bound to 127.0.0.1 on a free port, and
stopped (with its whole process group) when the test module is done. Tests that need runs to
run also start a scheduler (LocalExecutor) and a dag-processor beside it.

Everything here waits with deadlines generous enough for a loaded 2-core CI machine: a deadline
costs nothing when things are fast, and one flaky live test costs a whole CI try. On SQLite the
metadata DB has the embedded default's settings (``cli.airflow_sqlite``): writers wait for one
another instead of failing with "database is locked"."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from cli.airflow_env import RUN_LATENCY_SETTINGS
from cli.airflow_sqlite import BUSY_TIMEOUT_SECONDS, sqlite_contention_settings
from cli.demo import DemoSeed
from hooks.local.local_process import free_port
from hooks.storage.catalog import CatalogHook
from hooks.storage.object_store import default_object_store
from octotrain.settings import REPO_ROOT, get_settings
from octotrain.storage import ObjectStore
from tests.factories import seed

T = TypeVar("T")

STARTUP_SECONDS = 300
# An answer of the api-server may wait for the metadata DB's write lock (SQLite: up to its busy
# timeout) and for a loaded machine besides.
HTTP_SECONDS = 2 * BUSY_TIMEOUT_SECONDS
# For what a scheduler, a dag-processor or a worker must do: parse, schedule, run a task.
SCHEDULER_SECONDS = 300
POLL_SECONDS = 0.5
# How long the components get to end after SIGTERM. A scheduler whose LocalExecutor still runs
# a task (a training the test no longer needs) waits for it; its process group is killed then.
STOP_GRACE_SECONDS = 10.0
SIMPLE_AUTH_MANAGER = (
    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
)


@dataclass(frozen=True)
class LiveAirflow:
    url: str
    env: dict[str, str]
    password: str  # the simple auth manager's admin; "" under others (FAB: tests add users)
    log: Path

    def admin_token(self) -> str:
        """A token of the simple auth manager's admin, for Airflow's REST API and the plugin's."""
        answer = httpx.post(
            f"{self.url}/auth/token",
            json={"username": "admin", "password": self.password},
            timeout=HTTP_SECONDS,
        )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["access_token"])

    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token()}"}

    def wait_until(
        self, what: str, check: Callable[[], T], timeout: float = SCHEDULER_SECONDS
    ) -> T:
        """Poll ``check`` until it returns something true, and return that; past ``timeout``
        seconds, fail with ``what`` and the end of every Airflow process's log."""
        deadline = time.monotonic() + timeout
        while not (result := check()):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n"
                                     + self.tail_of_logs())  # fmt: skip
            time.sleep(POLL_SECONDS)
        return result

    def tail_of_logs(self) -> str:
        """The end of the log of each Airflow process started for the test."""
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')[-2000:]}"
            for log in sorted(self.log.parent.glob("*.log"))
        )

    def airflow(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "airflow", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )


def airflow_env(
    root: Path,
    octotrain: dict[str, str],
    port: int = 0,
    dags_folder: Path | None = None,
    metadata_url: str | None = None,
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OCTOTRAIN_"))}
    metadata_url = metadata_url or f"sqlite:///{root / 'airflow.db'}"
    # The tests' cores for the local admission (tests/conftest.py), unless ``octotrain`` sets them.
    cores = {"OCTOTRAIN_LOCAL_CORES": os.environ.get("OCTOTRAIN_LOCAL_CORES", "")}
    return (
        env
        | sqlite_contention_settings(metadata_url)  # what ``octotrain`` sets wins
        | cores
        | octotrain
        | {
            "AIRFLOW_HOME": str(root / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder or REPO_ROOT / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            **RUN_LATENCY_SETTINGS,  # as the embedded default and production set it
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": metadata_url,
            "AIRFLOW__API_AUTH__JWT_SECRET": "live-airflow-tests-" + "0123456789abcdef" * 4,
            "AIRFLOW__API__SECRET_KEY": "live-airflow-tests-secret",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "PYTHONPATH": str(REPO_ROOT),
        }
    )


@contextmanager
def live_airflow(
    root: Path,
    octotrain: dict[str, str],
    *,
    components: tuple[str, ...] = (),
    dags_folder: Path | None = None,
    metadata_url: str | None = None,
) -> Iterator[LiveAirflow]:
    """Migrate, serialize the DAGs of the catalog in ``octotrain`` settings (from Octotrain's
    ``dags/`` or ``dags_folder``), start the server and the other ``components``
    (``scheduler``, ``dag-processor``, ``celery worker …``); the metadata DB is SQLite unless
    ``metadata_url``."""
    port = free_port()
    env = airflow_env(root, octotrain, port, dags_folder, metadata_url)
    log = root / "api-server.log"
    for step in (["db", "migrate"], ["dags", "reserialize"]):
        done = subprocess.run(
            [sys.executable, "-m", "airflow", *step], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-3000:]
    with log.open("wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "airflow", "api-server", "--host", "127.0.0.1",
             "--port", str(port)],
            env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    processes = [server]
    for number, component in enumerate(components):
        # A component is Airflow's command line after ``airflow``: "scheduler", or
        # "celery worker --celery-hostname w1@%h" (its log is named by its first word).
        name = f"{component.split()[0]}-{number}"
        with (root / f"{name}.log").open("wb") as output:
            processes.append(
                subprocess.Popen([sys.executable, "-m", "airflow", *component.split()], env=env,
                                 stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
            )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, server, log)
        password = ""
        if env.get("AIRFLOW__CORE__AUTH_MANAGER", SIMPLE_AUTH_MANAGER) == SIMPLE_AUTH_MANAGER:
            passwords = root / "airflow" / "simple_auth_manager_passwords.json.generated"
            password = json.loads(passwords.read_text())["admin"]
        yield LiveAirflow(url=url, env=env, password=password, log=log)
    finally:
        stop_all(processes)


def stop_all(
    processes: list[subprocess.Popen[bytes]], grace_seconds: float = STOP_GRACE_SECONDS
) -> None:
    """SIGTERM to every process group at once (the scheduler's task processes included), then
    SIGKILL to those still there after ``grace_seconds`` in all: one slow component no longer
    makes the next one wait its turn."""
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _wait_healthy(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"api-server exited: {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/api/v2/monitor/health", timeout=10).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(POLL_SECONDS)
    raise AssertionError(f"api-server not healthy in {STARTUP_SECONDS}s: {log.read_text()[-3000:]}")


@contextmanager
def demo_airflow(
    root: Path,
    settings: dict[str, str],
    prepare: Callable[[CatalogHook, ObjectStore, DemoSeed], T] | None = None,
    **options: Any,
) -> Iterator[tuple[LiveAirflow, T | None]]:
    """``live_airflow`` over a catalog seeded with the demo (``settings`` in this process's
    environment meanwhile); ``prepare`` adds to the catalog (given the demo's ids) before the
    DAGs are serialized, and what it returns comes with the server."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in settings.items():
            patch.setenv(key, value)
        get_settings.cache_clear()
        catalog = CatalogHook(get_settings().catalog_url)
        catalog.migrate()
        store = default_object_store()  # the settings' store: the Airflow processes' too
        demo = seed(catalog, store)
        prepared = prepare(catalog, store, demo) if prepare else None
        catalog.dispose()
        try:
            with live_airflow(root, settings, **options) as server:
                yield server, prepared
        finally:
            get_settings.cache_clear()
