"""The console inside Airflow's own UI, for the browser tests of every page: one real Airflow
(api-server with the plugin, scheduler with the LocalExecutor, dag-processor) shared by the whole
session (``airflow`` in conftest.py), a signed-in page, and the iframe Airflow shows a view in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from playwright.sync_api import BrowserContext, FrameLocator, Page

from tests.factories import add_command_algorithm
from tests.live_airflow import HTTP_SECONDS, SCHEDULER_SECONDS, LiveAirflow, demo_airflow

# What the page waits for from Airflow's scheduler and dag-processor: parse the new DAG (the
# page retries its start for up to 90 s meanwhile), start the run, stop it.
AIRFLOW_MS = SCHEDULER_SECONDS * 1000

# Writes a checkpoint (so that a stopped run can be resumed), then trains until it is stopped.
# (Short words: the algorithms table shows the command, and a test checks that it fits 1100 px.)
SLOW_TRAINING = (
    "import os, time\n"
    "key = 'CHECKPOINT'\n"
    "path = os.getenv(key) + '/state'\n"
    "with open(path, 'w') as out:\n"
    "    out.write('1')\n"
    "print('training until stopped', flush=True)\ntime.sleep(600)\n"
)


def console_airflow(root: Path) -> Iterator[LiveAirflow]:
    """The demo's Airflow with an algorithm that trains until stopped ("slow-training")."""
    settings = {"OCTOTRAIN_STATE_DIR": str(root / "state"), "OCTOTRAIN_STOP_GRACE_SECONDS": "2"}
    with demo_airflow(
        root,
        settings,
        lambda catalog, _store, _demo: add_command_algorithm(
            catalog, "slow-training", SLOW_TRAINING
        ),
        components=("scheduler", "dag-processor"),
    ) as (server, _):
        yield server


def signed_in(context: BrowserContext, airflow: LiveAirflow) -> Page:
    """A page of ``context`` with the admin's session cookie of Airflow's UI."""
    context.set_default_timeout(HTTP_SECONDS * 1000)  # a page or a click answered by Airflow
    token = airflow.admin_token()
    context.add_cookies([{"name": "_token", "value": token, "url": airflow.url}])
    return context.new_page()


def airflow_frame(page: Page, title: str) -> FrameLocator:
    """The iframe in which Airflow's UI shows the plugin's view ``title``."""
    return page.frame_locator(f"iframe[title='{title}']")
