"""The console's Usage page: a project's month, its totals and a row per task, in headless
chromium in the light and the dark theme (screenshots in test-artifacts/); a bad month or a
project the user is not in answered on the page, naming the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from octotrain.catalog.node_holds import record_hold
from plugins.app import create_app
from tests.browser import chromium, screenshot_path, serving
from tests.factories import VALID_TASK
from tests.plan_rows import recorded
from tests.plugins.api.conftest import Api, token

OCTOBER = datetime(2026, 10, 5, 10, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _billed_task(api: Api, name: str, *, nodes: int, gpu_count: int) -> tuple[int, int]:
    """A task of demo with one run in October 2026: queued 30 minutes, then ``nodes`` nodes of
    4 CPUs and ``gpu_count`` GPUs for 2 hours."""
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": name}, headers=api.as_user("alice")
    ).json()
    resources = {"spec": "s", "kind": "cce", "cpu": 4.0, "memory_mib": 512, "gpu_count": gpu_count,
                 "gpu_type": ""}  # fmt: skip
    with default_catalog().session() as session:
        run = Run(
            task_id=task["id"], airflow_run_id=f"manual__{name}", state=RunState.SUCCESS,
            node_count=nodes, plan=recorded(resources=resources), started_at=OCTOBER,
            ended_at=OCTOBER + 3 * HOUR,
        )  # fmt: skip
        session.add(run)
        session.flush()
        for index in range(nodes):
            record_hold(
                session, run_id=run.id, node_index=f"distributed-{index}",
                started_at=OCTOBER + HOUR / 2, ended_at=OCTOBER + 2.5 * HOUR,
            )  # fmt: skip
        run_id = run.id
    return int(task["id"]), run_id


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_the_usage_page_in_a_browser(api: Api) -> None:
    gpu_task, _run = _billed_task(api, "usage-gpu", nodes=2, gpu_count=1)
    _billed_task(api, "usage-cpu", nodes=1, gpu_count=0)
    with chromium() as browser, serving(create_app()) as base:
        context = browser.new_context(viewport={"width": 1100, "height": 700})
        context.add_cookies([{"name": "_token", "value": token("alice"), "url": base}])
        page = context.new_page()
        page.goto(f"{base}/ui/usage?project=demo&month=2026-10")
        expect(page.locator(".console-nav a[aria-current=page]")).to_have_text("Usage")
        expect(page.get_by_role("heading", name="Project demo, 2026-10 UTC")).to_be_visible()
        expect(page.locator("[data-total=node_hours] dd")).to_have_text("6.00")
        expect(page.locator("[data-total=cpu_hours] dd")).to_have_text("24.00")
        expect(page.locator("[data-total=gpu_hours] dd")).to_have_text("4.00")
        expect(page.locator("[data-total=queued_hours] dd")).to_have_text("1.00")
        rows = page.locator("#usage-tasks tbody tr")
        expect(rows.locator("a.object-name")).to_have_text(["usage-gpu", "usage-cpu"])
        expect(rows.first.locator("td")).to_have_text(
            ["usage-gpu", "1", "4.00", "16.00", "4.00", "0.50", "2.00"]
        )
        expect(rows.first.locator("a")).to_have_attribute("href", f"/ui/tasks/{gpu_task}")
        page.screenshot(path=screenshot_path("usage-page-light"), full_page=True)
        page.emulate_media(color_scheme="dark")
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        page.screenshot(path=screenshot_path("usage-page-dark"), full_page=True)

        page.fill("input[name=month]", "2026-09")  # the form: another month, nothing used
        page.click("#usage-form button[type=submit]")
        expect(page.locator("#no-usage")).to_contain_text("No run of this project used")
        page.get_by_role("link", name="2026-10").click()  # the next month's link
        expect(rows).to_have_count(2)

        page.goto(f"{base}/ui/usage?project=demo&month=2026-13")
        expect(page.locator("[data-error-for=month]")).to_contain_text("month: must be a month")
        page.emulate_media(color_scheme="light")
        page.screenshot(path=screenshot_path("usage-page-bad-month"), full_page=True)


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_bad_input_and_other_projects_are_answered_on_the_page(api: Api) -> None:
    bad = api.client.get("/ui/usage?project=demo&month=10-2026", headers=api.as_user("alice"))
    assert bad.status_code == 400 and "month: must be a month as YYYY-MM" in bad.text
    unknown = api.client.get("/ui/usage?project=nope", headers=api.as_user("alice"))
    assert unknown.status_code == 404 and "project &#39;nope&#39; not found" in unknown.text
    hidden = api.client.get("/ui/usage?project=demo", headers=api.as_user("bob"))
    assert hidden.status_code == 404
    assert api.client.get("/ui/usage").status_code == 401


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_the_run_page_shows_the_run_s_usage(api: Api) -> None:
    task_id, run_id = _billed_task(api, "usage-run", nodes=2, gpu_count=1)
    page = api.client.get(f"/ui/tasks/{task_id}/runs/{run_id}", headers=api.as_user("alice"))
    assert page.status_code == 200
    assert (
        "4.00 node-hours, 16.00 CPU-hours, 4.00 GPU-hours; queued 0.50 h, training 2.00 h"
        in page.text
    )
    assert "(2 of 2 nodes recorded)" in page.text
