"""The task form, the task page and a run's page in headless chromium inside a real Airflow's
UI (its sandboxed iframe), in both themes at 1100 and 1600 px: a name over 64 characters is
refused with its rule (never cut), the problems' summary is in view and focused after a failed
Create; Run now with a bool and an enum parameter starts a run with them; the run's own page
shows them, and its links (Metrics, the DAG run) go into Airflow on a click. Screenshots go to
test-artifacts/."""

from __future__ import annotations

import re
from urllib.parse import quote

import httpx
from playwright.sync_api import FrameLocator, Page, expect

from tests.browser import chromium, screenshot_path
from tests.factories import VALID_TASK
from tests.live_airflow import HTTP_SECONDS, LiveAirflow
from tests.plugins.ui.inside_airflow import AIRFLOW_MS, signed_in

CHOICE_ALGORITHM = {
    "name": "choice-training",
    "image": "python:3.11-slim",
    "command": ["python", "-c", "print('trained')"],
    "sample_type": "table",
    "env": {"API_TOKEN": "abc123"},  # a secret: shown nowhere, Airflow's pages included
    "parameters": [
        {"name": "shuffle", "type": "bool", "default": False},
        {"name": "optimizer", "type": "enum", "choices": ["sgd", "adam"], "default": "sgd"},
    ],
}


def _console(page: Page) -> FrameLocator:
    """The console's iframe in Airflow's UI, whatever its navigation entry is called."""
    return page.frame_locator("iframe[src*='/octotrain/ui/tasks']")


def _both_themes(page: Page, name: str) -> None:
    """Screenshots of the page as it is in light at 1100 px and in dark at 1600 px."""
    page.set_viewport_size({"width": 1100, "height": 900})
    page.emulate_media(color_scheme="light")
    page.screenshot(path=screenshot_path(f"{name}-light-1100"))
    page.set_viewport_size({"width": 1600, "height": 900})
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=screenshot_path(f"{name}-dark-1600"))
    page.emulate_media(color_scheme="light")


def test_the_form_refuses_a_long_name_and_shows_its_problems_in_view(
    airflow: LiveAirflow,
) -> None:
    with chromium() as browser:
        for width, scheme in ((1100, "light"), (1600, "dark")):
            context = browser.new_context(
                viewport={"width": width, "height": 900}, color_scheme=scheme
            )
            page = signed_in(context, airflow)
            page.goto(f"{airflow.url}/plugin/octotrain-tasks")
            console = _console(page)
            console.locator("section[data-project=demo]").get_by_text("New training task").click()
            expect(console.locator("#task-form[data-ready=true]")).to_be_attached()

            name = console.locator("input[name=name]")
            name.fill("n" * 65)
            expect(name).to_have_value("n" * 65)  # nothing cut
            expect(console.locator("[data-count-for=name]")).to_have_text("65/64")
            expect(console.locator("[data-error-for=name]")).to_contain_text("over the limit of 64")
            expect(console.locator("#priority-hint")).to_contain_text("higher priority runs first")
            console.locator("select[name=algorithm]").select_option("linear-regression-numpy")
            expect(console.locator("#parameter-epochs-hint")).to_contain_text("int; 1 to")
            data = console.locator("[data-list-for=data_inputs] label", has_text="house-prices v1")
            expect(data.locator(".badge")).to_have_text("published")
            data.locator("input").check()
            console.locator("input[name=node_count]").fill("9")

            console.locator("#create").click()
            summary = console.locator("#form-problems")
            expect(summary).to_be_in_viewport()
            expect(summary).to_be_focused()
            expect(summary).to_contain_text("2 problems")
            expect(summary.get_by_role("link")).to_have_text(["Name", "Nodes"])
            expect(console.locator("[data-error-for=name]")).to_have_text(
                "must be 1-64 characters of Chinese or English letters, digits, '_' and '-'"
            )
            expect(console.locator("[data-error-for=node_count]")).to_have_text(
                "must be at most 4 for resource spec 'cpu-small', got 9"
            )
            expect(console.locator("body")).not_to_contain_text("node_count:")  # no raw keys
            page.screenshot(path=screenshot_path(f"task-form-refused-{scheme}-{width}"))
            summary.get_by_role("link", name="Nodes").click()
            expect(console.locator("input[name=node_count]")).to_be_focused()
            context.close()


def test_run_now_with_choices_and_the_runs_own_page(airflow: LiveAirflow) -> None:
    headers = airflow.admin_headers()
    made = httpx.post(f"{airflow.url}/octotrain/api/v1/projects/demo/algorithms",
                      json=CHOICE_ALGORITHM, headers=headers, timeout=HTTP_SECONDS)  # fmt: skip
    assert made.status_code == 201, made.text
    task = httpx.post(
        f"{airflow.url}/octotrain/api/v1/tasks",
        json=VALID_TASK | {"name": "choices-task", "algorithm": "choice-training"},
        headers=headers,
        timeout=HTTP_SECONDS,
    )
    assert task.status_code == 201, task.text
    dag_id = task.json()["dag_id"]
    with chromium() as browser:
        page = signed_in(browser.new_context(viewport={"width": 1100, "height": 900}), airflow)
        page.goto(f"{airflow.url}/plugin/octotrain-tasks")
        console = _console(page)
        console.get_by_role("link", name="choices-task").click()
        expect(console.locator("#task-page[data-ready=true]")).to_be_attached()
        parameters = console.locator("#task-parameters")
        expect(parameters).to_contain_text("shuffle=false (default)")
        expect(parameters).to_contain_text('optimizer="sgd" (default)')

        console.locator("#run-settings").get_by_label("shuffle").check()
        console.locator("#run-settings select[name=optimizer]").select_option("adam")
        console.locator("#run-settings").get_by_label("Longest training, s").fill("7200")
        _both_themes(page, "task-page-run-now-choices")
        console.locator("#run-now").click()
        row = console.locator("#runs tbody tr").first
        expect(row).to_be_visible(timeout=AIRFLOW_MS)  # once Airflow has parsed the new DAG
        ran_with = row.locator(".run-parameters")
        expect(ran_with).to_contain_text("shuffle=true", timeout=AIRFLOW_MS)  # once validated
        expect(ran_with).to_contain_text('optimizer="adam"')
        expect(row.locator(".run-link")).to_contain_text("manual by admin")
        airflow_run = row.get_attribute("data-airflow-run")
        assert airflow_run

        row.locator(".run-link").click()
        expect(console.locator("#run-page[data-ready=true]")).to_be_attached()
        expect(console.locator("#run-parameters")).to_contain_text("shuffle=true")
        expect(console.locator("#run-phase .state").first).to_contain_text("validate")
        expect(console.locator("#run-conf")).to_contain_text('optimizer="adam"')
        expect(console.locator("#run-conf")).to_contain_text("max_training_seconds=7200")
        expect(console.locator("#run-env")).to_contain_text("API_TOKEN=***")
        assert "abc123" not in console.locator("#run-page").inner_text()
        _both_themes(page, "run-page")
        dag_run = f"/dags/{dag_id}/runs/{quote(airflow_run, safe='')}"
        console.get_by_role("link", name="Metrics").click()
        expect(page).to_have_url(re.compile(re.escape(f"{dag_run}/plugin/octotrain-metrics") + "$"))
        page.go_back()  # Airflow's router took the click: Back returns to the run's page
        expect(console.locator("#run-page[data-ready=true]")).to_be_attached()
        console.get_by_role("link", name="DAG run in Airflow").click()
        expect(page).to_have_url(re.compile(re.escape(dag_run) + "$"))
