"""The console in headless chromium against a real Airflow (api-server with the plugin,
scheduler with the LocalExecutor, dag-processor): create a task through the form, see the
rules' error next to its field, save it, run it from its page (the DAG is parsed within
seconds of the save), watch it run, and stop it. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.browser import chromium, screenshot_path
from tests.factories import add_command_algorithm
from tests.live_airflow import HTTP_SECONDS, SCHEDULER_SECONDS, LiveAirflow, demo_airflow

# What the page waits for from Airflow's scheduler and dag-processor: parse the new DAG (the
# page retries its start for up to 90 s meanwhile), start the run, stop it.
AIRFLOW_MS = SCHEDULER_SECONDS * 1000

# Trains until it is stopped.
SLOW_TRAINING = "import time\nprint('training until stopped', flush=True)\ntime.sleep(600)\n"


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveAirflow]:
    root = tmp_path_factory.mktemp("console")
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


def test_create_see_an_error_run_and_stop_in_the_console(airflow: LiveAirflow) -> None:
    with chromium() as browser:
        context = browser.new_context()
        context.set_default_timeout(HTTP_SECONDS * 1000)  # a page or a click answered by Airflow
        token = airflow.admin_token()
        context.add_cookies([{"name": "_token", "value": token, "url": airflow.url}])
        page = context.new_page()
        page.goto(f"{airflow.url}/octotrain/ui/tasks")
        page.locator("section[data-project=demo]").get_by_text("New training task").click()
        expect(page.locator("#task-form[data-ready=true]")).to_be_attached()  # choices filled
        expect(page.locator("#mounts-field")).to_be_hidden()  # a CCE spec: no resource mounts

        page.fill("input[name=name]", "console-task")
        page.select_option("select[name=resource_spec]", "cpu-small")
        page.fill("input[name=node_count]", "9")
        page.select_option("select[name=algorithm]", "slow-training")
        page.select_option("select[name=model_repository]", "house-price-model")
        page.select_option("select[name=data_inputs]", ["dataset:house-prices:v1"])
        page.click("#create")
        error = page.locator("[data-error-for=node_count]")
        expect(error).to_contain_text("must be at most 4 for resource spec 'cpu-small', got 9")
        expect(page.locator("#form-problems")).to_be_visible()
        page.screenshot(path=screenshot_path("console-form-error"), full_page=True)

        page.fill("input[name=node_count]", "1")
        page.click("#create")
        page.wait_for_url(re.compile(r"/octotrain/ui/tasks/\d+$"))
        expect(page.get_by_role("heading", name=re.compile("console-task"))).to_be_visible()
        expect(page.locator("#task-page[data-ready=true]")).to_be_attached()

        page.click("#run-now")
        row = page.locator("#runs tbody tr").first
        expect(row).to_be_visible(timeout=AIRFLOW_MS)  # once Airflow has parsed the new DAG
        expect(row.locator(".state")).to_have_text("running", timeout=AIRFLOW_MS)
        page.screenshot(path=screenshot_path("console-task-running"), full_page=True)
        row.get_by_role("button", name="Stop").click()
        expect(page.locator("#task-message")).to_contain_text(
            "stopped by admin", timeout=HTTP_SECONDS * 1000
        )
        expect(row.locator(".state")).to_have_text("stopped", timeout=AIRFLOW_MS)
        expect(row.get_by_role("button", name="Stop")).to_have_count(0)
        page.screenshot(path=screenshot_path("console-task-stopped"), full_page=True)

        page.goto(f"{airflow.url}/octotrain/ui/tasks?status=stopped")
        expect(page.locator("a.task-name")).to_have_text(["console-task"])
