"""The door to Airflow's REST API (v2), through which runs are triggered and followed from
outside Airflow (``octotrain task run``, ``octotrain up``), as any client of Airflow would."""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

# This client's error, kept apart so that catching it imports no HTTP client.
from hooks.airflow.airflow_api_error import AirflowApiError as AirflowApiError
from octotrain.abort_flags import appended_note
from octotrain.settings import Settings

TERMINAL_RUN_STATES = frozenset({"success", "failed"})
EMBEDDED_PASSWORDS = Path("airflow") / "simple_auth_manager_passwords.json"
# The run id of a run started on a request (here, or by the plugin's request id): Airflow keeps
# run ids unique per DAG, so a repeated request cannot start a second run.
REQUEST_RUN_PREFIX = "request__"

# Airflow's 500 when a statement failed in its metadata DB (its session is then rolled back).
# On the embedded default's SQLite it is what a write request gets when its action log met
# another request's write lock on the api-server's event loop, which does not wait for it
# (cli.airflow_sqlite), before the request did anything: a repeat a moment later goes through.
# Requests that are safe to repeat even had it been committed are repeated, with waits doubling
# from the first (jittered, so that clients that collided do not collide again), for at most
# a minute.
DATABASE_ERROR = "Database error"
DATABASE_ERROR_FIRST_WAIT_SECONDS = 0.2
DATABASE_ERROR_MAX_WAIT_SECONDS = 2.0
DATABASE_ERROR_REPEAT_SECONDS = 60.0


def embedded_password(settings: Settings) -> str | None:
    """The embedded default's generated password of ``settings.airflow_username``."""
    path = settings.state_dir / EMBEDDED_PASSWORDS
    if not path.is_file():
        return None
    return json.loads(path.read_text()).get(settings.airflow_username)


# Longer than the api-server may wait for the embedded default's metadata DB to be free (a
# minute: cli.airflow_sqlite), so that a busy scheduler delays an answer instead of failing it.
ANSWER_TIMEOUT_SECONDS = 90


def new_run_id() -> str:
    """A run id no one else has: a new request id's."""
    return REQUEST_RUN_PREFIX + uuid.uuid4().hex


class AirflowRestClient:
    def __init__(self, base_url: str, *, timeout: float = ANSWER_TIMEOUT_SECONDS) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = httpx.Client(base_url=self.base_url, timeout=timeout)

    @classmethod
    def from_settings(cls, settings: Settings) -> AirflowRestClient:
        """A client logged in as the configured user."""
        client = cls(settings.airflow_api_url)
        password = settings.airflow_password or embedded_password(settings)
        if not password:
            raise AirflowApiError(
                f"no password for Airflow user '{settings.airflow_username}': set "
                "OCTOTRAIN_AIRFLOW_PASSWORD"
            )
        client.login(settings.airflow_username, password)
        return client

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise AirflowApiError(f"cannot reach Airflow at {self.base_url}: {error}") from None
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise AirflowApiError(
                f"Airflow answered {response.status_code} to {method} {path}: {detail}",
                status=response.status_code,
                reason=detail.get("reason") if isinstance(detail, dict) else None,
            )
        return response

    def _repeatable_call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """``_call`` for a request that is safe to repeat, repeated while Airflow answers that
        its metadata DB failed it (``DATABASE_ERROR``)."""
        deadline = time.monotonic() + DATABASE_ERROR_REPEAT_SECONDS
        wait = DATABASE_ERROR_FIRST_WAIT_SECONDS
        while True:
            try:
                return self._call(method, path, **kwargs)
            except AirflowApiError as error:
                if error.status != 500 or error.reason != DATABASE_ERROR:
                    raise
                if time.monotonic() + wait > deadline:
                    raise
            time.sleep(random.uniform(wait / 2, wait))
            wait = min(2 * wait, DATABASE_ERROR_MAX_WAIT_SECONDS)

    def healthy(self) -> bool:
        try:
            return self.http.get("/api/v2/monitor/health").status_code == 200
        except httpx.HTTPError:
            return False

    def login(self, username: str, password: str) -> None:
        response = self._call(
            "POST", "/auth/token", json={"username": username, "password": password}
        )
        self.http.headers["Authorization"] = f"Bearer {response.json()['access_token']}"

    def dag_exists(self, dag_id: str) -> bool:
        try:
            self._call("GET", f"/api/v2/dags/{dag_id}")
        except AirflowApiError as error:
            if error.status == 404:
                return False
            raise
        return True

    def unpause(self, dag_id: str) -> None:
        self._repeatable_call("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})

    def trigger(
        self, dag_id: str, conf: dict[str, Any] | None = None, *, run_id: str | None = None
    ) -> str:
        """Start a run now (``logical_date: null``: runs of a DAG without schedule need no
        date); returns its run id.

        The run id is a new request id's (``new_run_id``, chosen by the caller or here), which
        makes the trigger safe to repeat: a repeat after a try that did create the run is
        refused as a duplicate (409), and that run, with this id that no one else has, is the
        one this trigger started."""
        run_id = run_id or new_run_id()
        path = f"/api/v2/dags/{dag_id}/dagRuns"
        body = {"dag_run_id": run_id, "logical_date": None, "conf": conf or {}}
        try:
            self._repeatable_call("POST", path, json=body)
        except AirflowApiError as error:
            if error.status != 409:
                raise
            self._call("GET", f"{path}/{run_id}")  # it is there: an earlier try created it
        return run_id

    def announce_asset(self, uri: str, extra: dict[str, Any]) -> bool:
        """Emit an event of the Asset ``uri``; False when Airflow has no such Asset (no DAG
        is scheduled on it)."""
        response = self._call("GET", "/api/v2/assets", params={"uri_pattern": uri})
        found = [item for item in response.json()["assets"] if item["uri"] == uri]
        if not found:
            return False
        self._call("POST", "/api/v2/assets/events", json={"asset_id": found[0]["id"],
                                                          "extra": extra})  # fmt: skip
        return True

    def retire_dag(self, dag_id: str, *, reason: str) -> str:
        """After its task was deleted: end the DAG's queued and running runs (marked failed,
        with ``reason`` as their note) and ask for a parse of its file; says what was done.
        Airflow's dag-processor then marks the DAG stale, once it has seen it gone from its
        file for ``[dag_processor] stale_dag_threshold`` (about a minute by default); a run
        that starts before fails at once in the stand-in of ``dags/deleted_tasks.py``.

        The DAG is not deleted (``DELETE /api/v2/dags/{dag_id}``): one file holds every task's
        DAG, and on SQLite a delete while the dag-processor saves that file's DAGs kills it
        (the plugin's ``hooks.airflow.dag_parsing.retire_task_dag`` marks it stale at once instead,
        which nothing in the REST API can). Nor is it paused: a paused DAG's triggered runs
        would wait for ever.
        """
        runs = self._call(
            "GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"state": ["queued", "running"]}
        ).json()["dag_runs"]
        for run in runs:
            path = f"/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}"
            self._call("PATCH", path, json={"state": "failed", "note": reason})
        token = self._call("GET", f"/api/v2/dags/{dag_id}/details").json()["file_token"]
        try:
            self._call("PUT", f"/api/v2/parseDagFile/{token}")
        except AirflowApiError as error:
            if error.status != 409:  # 409: a parse of the file is already requested
                raise
        return (
            f"ended {len(runs)} unfinished run(s) of its DAG in Airflow, whose dag-processor "
            "retires the DAG once it sees it gone from its file"
        )

    def add_run_note(self, dag_id: str, run_id: str, *, note: str) -> None:
        """Add ``note`` to the run's note, after what it said (which stays), as
        ``hooks.airflow.dag_runs.add_run_note`` does in-process."""
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}"
        earlier = self._call("GET", path).json().get("note")
        self._call(
            "PATCH", path, params={"update_mask": "note"},
            json={"note": appended_note(earlier, note)},
        )  # fmt: skip

    def run_state(self, dag_id: str, run_id: str) -> str:
        response = self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")
        return str(response.json()["state"])


def wait_until(what: str, check: Callable[[], Any], *, timeout: float, every: float = 2) -> Any:
    """Poll ``check`` until it returns something true; ``TimeoutError`` naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)
