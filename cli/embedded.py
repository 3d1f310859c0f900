"""``octotrain up``: the embedded default from one command.

Migrates the catalog, seeds the demo, starts ``airflow standalone`` (api-server, scheduler,
dag-processor, triggerer) with Octotrain's DAGs and plugin, runs the demo task through
Airflow's REST API, prints where everything is, and keeps Airflow running until Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from cli.airflow_components import (
    ComponentFailed,
    ComponentWatch,
    check_port_free,
    with_own_bin_on_path,
)
from cli.airflow_env import ADMIN_USER, admin_password, airflow_environment, airflow_home
from cli.demo import seed_demo
from hooks.airflow.airflow_rest import TERMINAL_RUN_STATES, AirflowApiError, AirflowRestClient
from hooks.storage.catalog import CatalogHook
from hooks.storage.object_store import object_store_from_url
from octotrain.catalog.backfill import backfill_manifests
from octotrain.contracts import dag_id_for
from octotrain.planning import recorded_plan
from octotrain.run_layout import RunLayout
from octotrain.run_lifecycle import find_run
from octotrain.settings import Settings


class EmbeddedError(RuntimeError):
    """The embedded default could not be brought up; the message says where to look."""


def _wait_for(what: str, check: Callable[[], Any], timeout: float, log_hint: str) -> Any:
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except (AirflowApiError, KeyError, ValueError) as error:
            last_error = error
        time.sleep(1)
    raise EmbeddedError(
        f"timed out after {timeout:.0f}s waiting for {what} ({last_error}); see {log_hint}"
    )


def bring_up(settings: Settings, *, port: int, echo: Callable[[str], None]) -> int:
    """Run the embedded default; return the exit status for the command."""
    catalog = CatalogHook(settings.catalog_url)
    catalog.migrate()
    store = object_store_from_url(settings.object_store_url)
    with catalog.session() as session:
        for prefix in backfill_manifests(session, store):
            echo(f"recorded the checksums of {prefix}/ (stored before checksums were kept)")
    demo = seed_demo(catalog, store)
    echo(
        f"catalog ready ({settings.catalog_url}); demo task {demo.task_id} '{demo.task_name}'"
        + (f", created {', '.join(demo.created)}" if demo.created else ", reused")
    )
    password = admin_password(settings)
    try:
        check_port_free(port)
    except ComponentFailed as error:
        raise EmbeddedError(str(error)) from None
    # A SIGTERM (not only Ctrl-C) must also stop the Airflow processes started below.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    log_path = airflow_home(settings) / "standalone.log"
    echo(f"starting Airflow (output in {log_path}) ...")
    with log_path.open("ab") as airflow_log:
        airflow = subprocess.Popen(
            [str(sys.executable), "-m", "airflow", "standalone"],
            env=with_own_bin_on_path(airflow_environment(settings, port=port)),
            stdout=airflow_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    watch = ComponentWatch(airflow.pid, log_path)
    try:
        return _run_demo(settings, demo.task_id, port, password, watch, airflow, echo)
    finally:
        _stop(airflow, echo)


def _run_demo(
    settings: Settings,
    task_id: int,
    port: int,
    password: str,
    watch: ComponentWatch,
    airflow: subprocess.Popen[bytes],
    echo: Callable[[str], None],
) -> int:
    base_url = f"http://127.0.0.1:{port}"
    api = AirflowRestClient(base_url)
    log_hint = str(watch.log)

    def alive(check: Callable[[], Any]) -> Callable[[], Any]:
        def guarded() -> Any:
            if airflow.poll() is not None:
                raise EmbeddedError(
                    f"Airflow exited with status {airflow.returncode}; see {log_hint}"
                )
            try:
                watch.check()
            except ComponentFailed as error:
                raise EmbeddedError(str(error)) from None
            return check()

        return guarded

    _wait_for("the Airflow api-server", alive(api.healthy), 600, log_hint)
    api.login(ADMIN_USER, password)
    dag_id = dag_id_for(task_id)
    _wait_for(f"DAG {dag_id} to be parsed", alive(lambda: api.dag_exists(dag_id)), 300, log_hint)
    api.unpause(dag_id)
    run_id = api.trigger(dag_id)
    echo(f"triggered {dag_id} run {run_id}; waiting for it to finish ...")
    state = _wait_for(
        f"run {run_id}",
        alive(lambda: (s := api.run_state(dag_id, run_id)) in TERMINAL_RUN_STATES and s),
        900,
        log_hint,
    )
    _print_summary(settings, task_id, run_id, state, base_url, password, echo)
    if state != "success":
        return 1
    echo("Airflow keeps running; press Ctrl-C to stop it.")
    try:
        airflow.wait()
    except KeyboardInterrupt:
        echo("stopping Airflow ...")
    return 0


def _print_summary(
    settings: Settings,
    task_id: int,
    run_id: str,
    state: str,
    base_url: str,
    password: str,
    echo: Callable[[str], None],
) -> None:
    catalog = CatalogHook(settings.catalog_url)
    with catalog.session() as session:
        run = find_run(session, task_id, run_id)
        version = run.model_version if run else None
        plan = recorded_plan(run) if run else None
        echo("")
        echo(f"demo run {run_id}: {state}")
        echo(f"Airflow UI: {base_url}  (login: {ADMIN_USER} / {password})")
        echo(f"  the run: {base_url}/dags/{dag_id_for(task_id)}/runs/{run_id}")
        echo(
            f"  its logs: {base_url}/dags/{dag_id_for(task_id)}/runs/{run_id}/plugin/octotrain-logs"
        )
        if plan is not None:
            layout = RunLayout(settings.runs_dir, task_id, plan.run_key)
            for node_index in plan.node_indices:
                echo(f"log files of node {node_index} (supplemental only on an abnormal end):")
                names = layout.log_names(node_index)
                for name in [*names.always(), names.supplemental]:
                    path = layout.log_path(name)
                    echo(f"  {path}" + ("" if path.exists() else "  (not written)"))
            echo(f"  collected in the object store under {layout.objects.logs}/")
        if version is not None:
            echo(
                f"model version archived: {version.repository.name} v{version.version} "
                f"({version.file_count} files, {version.size_bytes} bytes) at "
                f"{settings.object_store_url}/{version.object_prefix}"
            )
        elif run is not None:
            echo(f"no model version archived: {run.message or run.state}")
    catalog.dispose()


def _stop(airflow: subprocess.Popen[bytes], echo: Callable[[str], None]) -> None:
    if airflow.poll() is not None:
        return
    os.killpg(airflow.pid, signal.SIGTERM)
    try:
        airflow.wait(timeout=60)
    except subprocess.TimeoutExpired:
        echo("Airflow did not stop within 60s; killing it")
        os.killpg(airflow.pid, signal.SIGKILL)
        airflow.wait()
