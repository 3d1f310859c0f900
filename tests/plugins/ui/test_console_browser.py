"""The console in headless chromium against a real Airflow (api-server with the plugin,
scheduler with the LocalExecutor, dag-processor): create a task through the form, see the
rules' error next to its field, save it, run it from its page (the DAG is parsed within
seconds of the save), watch it run, stop it (asked first), see it stopped on its page (failed
in Airflow, with the note), resume it from its checkpoint and stop that run too. Inside
Airflow's own UI, where the pages are in Airflow's sandboxed iframe (no top navigation, no
modals): links into Airflow go there on a
click, through Airflow's router; Copy and Delete work through the page's dialogs; the run tabs
of another DAG's run say that it is not a training run. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
from urllib.parse import quote

import httpx
from playwright.sync_api import expect

from tests.browser import chromium, screenshot_path
from tests.factories import VALID_TASK
from tests.live_airflow import HTTP_SECONDS, LiveAirflow
from tests.plugins.ui.inside_airflow import AIRFLOW_MS, airflow_frame, signed_in


def test_create_see_an_error_run_and_stop_in_the_console(airflow: LiveAirflow) -> None:
    with chromium() as browser:
        page = signed_in(browser.new_context(), airflow)
        page.goto(f"{airflow.url}/octotrain/ui/tasks")
        page.locator("section[data-project=demo]").get_by_text("New training task").click()
        expect(page.locator("#task-form[data-ready=true]")).to_be_attached()  # choices filled
        expect(page.locator("#mounts-field")).to_be_hidden()  # a CCE spec: no resource mounts

        page.fill("input[name=name]", "console-task")
        page.select_option("select[name=resource_spec]", "cpu-small")
        page.fill("input[name=node_count]", "9")
        page.select_option("select[name=algorithm]", "slow-training")
        page.select_option("select[name=model_repository]", "house-price-model")
        page.check("input[name=data_inputs][value='dataset:house-prices:v1']")
        page.fill("input[name=max_training_seconds]", "0")
        page.click("#create")
        error = page.locator("[data-error-for=node_count]")
        expect(error).to_contain_text("must be at most 4 for resource spec 'cpu-small', got 9")
        expect(page.locator("[data-error-for=max_training_seconds]")).to_contain_text(
            "must be a whole number of seconds from 1 to 2592000 (30 days)"
        )
        expect(page.locator("#form-problems")).to_be_visible()
        page.screenshot(path=screenshot_path("console-form-error"), full_page=True)

        page.fill("input[name=node_count]", "1")
        page.fill("input[name=max_training_seconds]", "3600")
        page.fill("input[name=hang_after_seconds]", "600")
        page.check("input[name=stop_when_hung]")
        page.click("#create")
        page.wait_for_url(re.compile(r"/octotrain/ui/tasks/\d+$"))
        expect(page.locator("#page-said")).to_have_text("Training task console-task created.")
        expect(page.get_by_role("heading", name=re.compile("console-task"))).to_be_visible()
        expect(page.locator("#task-page[data-ready=true]")).to_be_attached()
        expect(page.locator("#task-limits")).to_have_text(
            "wait for resources no limit · training 3600 s · restarts after a lost node "
            "2 (default) · hung when silent 600 s, then stopped"
        )

        page.click("#run-now")
        row = page.locator("#runs tbody tr").first
        expect(row).to_be_visible(timeout=AIRFLOW_MS)  # once Airflow has parsed the new DAG
        expect(row.locator(".state")).to_have_text("running", timeout=AIRFLOW_MS)
        page.screenshot(path=screenshot_path("console-task-running"), full_page=True)
        row.get_by_role("button", name="Stop").click()  # asked first, in a dialog of the page
        confirm = page.get_by_role("dialog")
        expect(confirm).to_contain_text(re.compile(r"Stop run #\d+\?"))
        page.screenshot(path=screenshot_path("console-task-stop-asked"))
        confirm.get_by_role("button", name="Stop the run").click()
        expect(confirm).to_have_count(0)
        expect(page.locator("#task-message")).to_contain_text(
            "stopped by admin", timeout=HTTP_SECONDS * 1000
        )
        expect(row.locator(".state")).to_have_text("stopped", timeout=AIRFLOW_MS)
        expect(row.get_by_role("button", name="Stop")).to_have_count(0)
        expect(row.locator(".run-reason")).to_contain_text(re.compile(r"^Stopped by admin at "))
        page.screenshot(path=screenshot_path("console-task-stopped"), full_page=True)
        run_id = row.get_attribute("data-airflow-run")
        catalog_id = row.get_attribute("data-run")

        # The stopped run's page: the stop in a line, Airflow's note rendered, the DAG run
        # failed in Airflow (no stopped state there), and Resume from its checkpoint.
        row.locator(".run-link").click()
        expect(page.locator("#run-page[data-ready=true]")).to_be_attached()
        expect(page.locator("h1")).to_contain_text(f"Run #{catalog_id} of console-task")
        expect(page.locator("#run-reason")).to_contain_text(re.compile(r"Stopped by admin at "))
        expect(page.locator("#run-note strong")).to_have_text("Stopped by admin")
        expect(page.locator("#run-conf")).to_contain_text("Airflow's state of the DAG run: failed")
        page.screenshot(path=screenshot_path("console-run-stopped"), full_page=True)
        page.get_by_role("button", name="Resume").click()
        page.get_by_role("dialog").get_by_role("button", name="Resume").click()
        page.wait_for_url(re.compile(r"/runs/\d+$"))
        expect(page.locator("#run-resumed-from a")).to_have_text(f"#{catalog_id}")
        page.get_by_role("button", name="Stop").click()
        page.get_by_role("dialog").get_by_role("button", name="Stop the run").click()
        expect(page.locator("#run-message")).to_contain_text("stopped by admin")
        expect(page.locator("#run-state")).to_have_text("stopped", timeout=AIRFLOW_MS)
        page.locator("#run-resumed-from a").click()
        expect(page.locator("#run-resumed-by a")).to_have_count(1)

        page.goto(f"{airflow.url}/octotrain/ui/tasks?status=stopped")
        expect(page.locator("a.task-name")).to_have_text(["console-task"])

        # Inside Airflow's UI: a click on the run's Metrics goes to that tab of the DAG run
        page.goto(f"{airflow.url}/plugin/octotrain-tasks")
        console = airflow_frame(page, "Training")
        # The stopped run's Metrics (the task's recent runs are listed: the resumed one too)
        metrics_tab = f"/runs/{quote(run_id, safe='')}/plugin/octotrain-metrics"
        console.locator(f"tr a[href$='{metrics_tab}']").click()
        expect(page).to_have_url(
            re.compile(re.escape(f"/runs/{quote(run_id, safe='')}/plugin/octotrain-metrics") + "$")
        )
        metrics = airflow_frame(page, "Metrics")
        expect(metrics.get_by_role("heading", name=re.compile("Training metrics"))).to_be_visible()
        page.screenshot(path=screenshot_path("console-metrics-tab-of-the-run"))
        # From Airflow's tab back to the run's page in the console: a real address inside
        # Airflow (a Ctrl-click or "Copy link" opens it there), followed by Airflow's router
        back_to_run = metrics.locator("#console-run-link")
        console_run = re.compile(
            rf"/plugin/octotrain-tasks/octotrain/ui/tasks/\d+/runs/{catalog_id}$"
        )
        expect(back_to_run).to_have_attribute("href", console_run)
        back_to_run.click()
        expect(page).to_have_url(console_run)
        expect(
            airflow_frame(page, "Training").locator("#run-page[data-ready=true]")
        ).to_be_attached()
        page.go_back()
        page.go_back()  # Airflow's router took the clicks: Back returns to the console
        expect(page).to_have_url(re.compile(r"/plugin/octotrain-tasks"))
        expect(console.locator("a.task-name", has_text="console-task")).to_be_visible()


def test_links_copy_and_delete_inside_airflows_ui(airflow: LiveAirflow) -> None:
    created = httpx.post(
        f"{airflow.url}/octotrain/api/v1/tasks",
        json=VALID_TASK | {"name": "linked-task"},
        headers=airflow.admin_headers(),
        timeout=HTTP_SECONDS,
    )
    assert created.status_code == 201, created.text
    dag_id = created.json()["dag_id"]
    with chromium() as browser:
        page = signed_in(browser.new_context(viewport={"width": 1600, "height": 900}), airflow)
        page.goto(f"{airflow.url}/plugin/octotrain-tasks")
        console = airflow_frame(page, "Training")
        task_link = console.get_by_role("link", name="linked-task")
        # A console link is the page's address inside Airflow, for the top window: a
        # Ctrl-click or "Copy link" opens it inside Airflow, not as a bare page
        expect(task_link).to_have_attribute(
            "href", re.compile(r"^/plugin/octotrain-tasks/octotrain/ui/tasks/\d+$")
        )
        expect(task_link).to_have_attribute("target", "_top")
        task_link.click()  # within the console, through Airflow's router
        expect(console.locator("#task-page[data-ready=true]")).to_be_attached()
        expect(page).to_have_url(re.compile(r"/plugin/octotrain-tasks/octotrain/ui/tasks/\d+$"))

        console.locator("#copy").click()
        dialog = console.locator("#copy-dialog")
        expect(dialog).to_be_visible()
        name = dialog.get_by_label("Name of the copy")
        expect(name).to_be_focused()
        name.fill("linked copy!")
        name.press("Enter")
        expect(dialog.locator("#copy-problems")).to_contain_text(
            "name: must be 1-64 characters of Chinese or English letters"
        )
        page.screenshot(path=screenshot_path("console-copy-refused"))
        page.emulate_media(color_scheme="dark")
        page.screenshot(path=screenshot_path("console-copy-refused-dark"))
        page.emulate_media(color_scheme="light")
        name.fill("linked-copy")
        name.press("Enter")
        expect(console.get_by_role("heading", name=re.compile("linked-copy"))).to_be_visible()
        expect(console.locator("#task-page[data-ready=true]")).to_be_attached()
        expect(console.locator("#page-said")).to_have_text(
            "Training task linked-copy created as a copy."
        )

        copy_dag = console.locator("h1 a.dag-link").inner_text()
        console.locator("h1 a.dag-link").click()
        expect(page).to_have_url(re.compile(f"/dags/{copy_dag}$"))
        page.go_back()
        expect(console.get_by_role("heading", name=re.compile("linked-copy"))).to_be_visible()

        console.locator("#delete").click()
        dialog = console.locator("#delete-dialog")
        expect(dialog.get_by_role("button", name="Delete")).to_be_focused()
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        console.locator("#delete").click()
        expect(dialog).to_be_visible()
        page.screenshot(path=screenshot_path("console-delete-dialog"))
        page.keyboard.press("Enter")
        expect(console.locator("#tasks-page")).to_be_visible()
        expect(console.locator("#page-said")).to_have_text("Training task linked-copy deleted.")
        expect(console.locator("a.task-name", has_text="linked-copy")).to_have_count(0)

        link = console.locator("tr", has_text="linked-task").get_by_role("link", name="DAG")
        with page.context.expect_page() as opened:  # as any link: a middle click, a new tab
            link.click(button="middle")
        expect(opened.value).to_have_url(re.compile(f"/dags/{dag_id}$"))
        opened.value.close()
        expect(page).to_have_url(re.compile(r"/plugin/octotrain-tasks/"))
        link.click()
        expect(page).to_have_url(re.compile(f"/dags/{dag_id}$"))

        # Opened on its own, outside Airflow, a link into Airflow is an ordinary link
        page.goto(f"{airflow.url}/octotrain/ui/tasks")
        page.locator("tr", has_text="linked-task").get_by_role("link", name="DAG").click()
        expect(page).to_have_url(re.compile(f"/dags/{dag_id}$"))


def test_a_tab_of_another_dags_run_says_it_is_not_a_training_run(airflow: LiveAirflow) -> None:
    def a_run() -> str | None:
        answer = httpx.get(
            f"{airflow.url}/api/v2/dags/octotrain_data_caches/dagRuns",
            params={"limit": 1},
            headers=airflow.admin_headers(),
            timeout=HTTP_SECONDS,
        )
        runs = answer.json()["dag_runs"]
        return runs[0]["dag_run_id"] if runs else None

    run_id = airflow.wait_until("a run of the data caches' DAG", a_run)
    with chromium() as browser:
        page = signed_in(browser.new_context(), airflow)
        page.goto(f"{airflow.url}/dags/octotrain_data_caches/runs/{quote(run_id, safe='')}"
                  "/plugin/octotrain-metrics")  # fmt: skip
        tab = airflow_frame(page, "Metrics")
        expect(
            tab.get_by_role("heading", name="This DAG run is not an Octotrain training run")
        ).to_be_visible()
        page.screenshot(path=screenshot_path("not-a-training-run"))
        page.emulate_media(color_scheme="dark")
        page.screenshot(path=screenshot_path("not-a-training-run-dark"))
        tab.get_by_role("link", name="Training tasks").click()
        expect(page).to_have_url(re.compile(r"/plugin/octotrain-tasks(/|$)"))
        expect(airflow_frame(page, "Training").locator("#tasks-page")).to_be_visible()
