"""The Airflow environment of the embedded default: one AIRFLOW_HOME under the state folder,
Octotrain's DAG folder, no example DAGs, a known admin login for the simple auth manager, and
a SQLite metadata DB whose writers wait for one another."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from cli.airflow_sqlite import sqlite_contention_settings
from octotrain.settings import REPO_ROOT, Settings

ADMIN_USER = "admin"
# How fast a run's stages follow one another (docs/reference/configuration.md). Plugins are
# loaded once in each Airflow process that starts tasks (the scheduler with its LocalExecutor,
# a Celery worker), whose task processes inherit them, instead of in every task process. A scheduler
# loop that found nothing to do sleeps 0.2 s, not 1 s, before looking again: a stage's end is
# seen sooner (0.3-0.6 s less wait before each of a run's stages, bench.trigger); a loop that
# scheduled something never sleeps, so a busy scheduler is unchanged.
RUN_LATENCY_SETTINGS = {
    "AIRFLOW__CORE__LAZY_LOAD_PLUGINS": "False",
    "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.2",
}


def airflow_home(settings: Settings) -> Path:
    return settings.state_dir / "airflow"


def admin_password(settings: Settings) -> str:
    """The admin password, generated once and kept in the simple auth manager's password file."""
    path = airflow_home(settings) / "simple_auth_manager_passwords.json"
    if path.exists():
        passwords = json.loads(path.read_text())
        if ADMIN_USER in passwords:
            return str(passwords[ADMIN_USER])
    path.parent.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(12)
    path.write_text(json.dumps({ADMIN_USER: password}))
    path.chmod(0o600)
    return password


def airflow_environment(settings: Settings, *, port: int) -> dict[str, str]:
    """Environment for ``airflow standalone`` and everything it starts (tasks included)."""
    home = airflow_home(settings)
    env = dict(os.environ)
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(home / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            **RUN_LATENCY_SETTINGS,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(
                home / "simple_auth_manager_passwords.json"
            ),
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            # Every Airflow process of the embedded default shares one host: a task start's call
            # to the execution API may wait seconds for CPU there, and Airflow's 5 s timeout
            # then fails the task at its start (seen with the machine's cores busy).
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "30",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "10",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "10",
            "OCTOTRAIN_STATE_DIR": str(settings.state_dir),
            "OCTOTRAIN_CATALOG_URL": settings.catalog_url,
            "OCTOTRAIN_OBJECT_STORE_URL": settings.object_store_url,
            "OCTOTRAIN_LAUNCHER": settings.launcher,
            "OCTOTRAIN_RUNS_DIR": str(settings.runs_dir),
        }
    )
    # Airflow's metadata DB is SQLite in AIRFLOW_HOME unless the shell names another; connect
    # arguments the shell sets win.
    metadata_url = env.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "sqlite:")
    for name, value in sqlite_contention_settings(metadata_url).items():
        env.setdefault(name, value)
    return env
