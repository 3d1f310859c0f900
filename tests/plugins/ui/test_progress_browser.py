"""A live run's phases, percent and time left on its page (a row per node) and in the task list
(a line under the run), and a waiting run's queue, position and reason, in headless chromium in
the light and the dark theme (screenshots in test-artifacts/)."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from hooks.local.local_admission import machine_capacity
from hooks.runs.run_files import FolderRunFiles
from hooks.runs.run_progress import phase_sink
from hooks.storage.catalog import default_catalog
from octotrain.admission import Demand
from octotrain.catalog.admissions import request_admission, settle_admissions
from octotrain.node_progress import Phase, PhaseRecord
from plugins.app import create_app
from tests.browser import chromium, screenshot_path, serving
from tests.plugins.api.conftest import Api, token
from tests.plugins.api.test_metrics_routes import new_run
from tests.stored_run_files import made


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_a_live_runs_progress_in_a_browser(api: Api) -> None:
    base, layout = new_run(api, "progress-page")
    now = time.time()
    phase_sink(FolderRunFiles(layout), "distributed-0")(PhaseRecord(Phase.TRAINING, now, now))
    samples = [{"time": now - 18 + 2 * n, "current": 10 * n, "total": 1000} for n in range(10)]
    made(layout.progress_path("distributed-0")).write_text(
        "".join(json.dumps(sample) + "\n" for sample in samples)
    )
    staging = PhaseRecord(Phase.STAGING, now - 10, now, 256 << 20, 1024 << 20)
    phase_sink(FolderRunFiles(layout), "distributed-1")(staging)
    page_path = base.removeprefix("/api/v1").replace("/tasks/", "/ui/tasks/", 1)
    holding, _ = new_run(api, "progress-holding")
    waiting, _ = new_run(api, "progress-queued")
    for queued in (holding, waiting):  # the second waits for the first (64 cores here)
        with default_catalog().session() as session:
            run_id, now = int(queued.rsplit("/", 1)[1]), datetime.now(UTC)
            request_admission(session, run_id=run_id, project="demo", priority=0,
                              demand=Demand(2, 40, 1024), now=now)  # fmt: skip
            settle_admissions(session, machine_capacity(), now=datetime.now(UTC))
    with chromium() as browser, serving(create_app()) as root:
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        context.add_cookies([{"name": "_token", "value": token("alice"), "url": root}])
        page = context.new_page()
        page.goto(root + page_path)
        shown = page.locator("#run-progress[data-ready=true]")
        expect(shown).to_have_attribute("data-phase", "staging")
        expect(shown.locator(".progress-summary").first).to_contain_text("staging data 25%")
        expect(shown.locator(".progress-summary").first).to_contain_text("about 30 s left")
        training = shown.locator("tr[data-node=distributed-0]")
        expect(training).to_contain_text("training 9%")
        expect(training).to_contain_text(re.compile(r"about 3 min left"))
        expect(training).to_contain_text("90 of 1000")
        staged = shown.locator("tr[data-node=distributed-1]")
        expect(staged).to_contain_text("256.0 MiB of 1.0 GiB")
        expect(staged.locator("progress")).to_have_attribute("value", "25")
        shown.scroll_into_view_if_needed()
        page.screenshot(path=screenshot_path("run-progress-light"), full_page=True)
        page.emulate_media(color_scheme="dark")
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        page.screenshot(path=screenshot_path("run-progress-dark"), full_page=True)

        page.goto(f"{root}/ui/tasks?q=progress-page")
        listed = page.locator(".run .run-progress[data-ready=true]")
        expect(listed).to_contain_text("staging data 25%")
        page.emulate_media(color_scheme="light")
        page.screenshot(path=screenshot_path("task-list-progress-light"))
        page.emulate_media(color_scheme="dark")
        page.screenshot(path=screenshot_path("task-list-progress-dark"))

        page.goto(root + waiting.removeprefix("/api/v1").replace("/tasks/", "/ui/tasks/", 1))
        queued = page.locator("#run-progress[data-ready=true] .queue-state.waiting")
        expect(queued).to_contain_text("queue local, position 1")
        expect(queued).to_contain_text("asked 2 nodes, 40 cores, 1 GiB of memory")
        expect(queued.locator(".queue-reason")).to_have_text(
            "waiting for this machine: 24 of 64 cores free, the run needs 40 cores"
        )
        page.screenshot(path=screenshot_path("run-waiting-dark"), full_page=True)
        page.emulate_media(color_scheme="light")
        page.screenshot(path=screenshot_path("run-waiting-light"), full_page=True)
        page.goto(f"{root}/ui/tasks?q=progress-queued")
        expect(page.locator(".run .run-progress[data-ready=true] .queue-reason")).to_contain_text(
            "24 of 64 cores free"
        )
        page.screenshot(path=screenshot_path("task-list-waiting-light"))
