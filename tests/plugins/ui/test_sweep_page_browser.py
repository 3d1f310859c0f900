"""The sweep pages in headless chromium inside a real Airflow's UI (the session's live Airflow,
its sandboxed iframe), at 1100 px: Sweep on a task's page opens the sweep form, a sweep with a
range beyond its parameter's bounds is refused with each problem next to its field; a finished
sweep's page shows its result, its trials (pruned ones in their colour) and its charts (the
pruned trials' curves grey and faint behind the others) in the light and the dark theme, and
Compare opens the ticked trials' comparison. Screenshots go to test-artifacts/."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from playwright.sync_api import FrameLocator, Page, expect

from hooks.storage.catalog import CatalogHook
from octotrain.settings import get_settings
from tests.browser import chromium, screenshot_path
from tests.factories import VALID_TASK
from tests.live_airflow import HTTP_SECONDS, LiveAirflow
from tests.plugins.ui.inside_airflow import signed_in
from tests.plugins.ui.sweep_rows import finished_sweep

# A page's own measure of drawing a sweep it has read (sweep.js): 24 trials here.
DRAWN_WITHIN_MS = 1500


@contextmanager
def live_catalog(airflow: LiveAirflow) -> Iterator[CatalogHook]:
    """The catalog of the live Airflow (its settings are in its environment)."""
    with pytest.MonkeyPatch.context() as patch:
        for key in [key for key in os.environ if key.startswith("OCTOTRAIN_")]:
            patch.delenv(key)
        for key, value in airflow.env.items():
            if key.startswith("OCTOTRAIN_"):
                patch.setenv(key, value)
        get_settings.cache_clear()
        catalog = CatalogHook(get_settings().catalog_url)
        try:
            yield catalog
        finally:
            catalog.dispose()
            get_settings.cache_clear()


def _console(page: Page) -> FrameLocator:
    """The console's iframe in Airflow's UI, whichever of its pages it shows."""
    return page.frame_locator("iframe[src*='/octotrain/ui/']")


def _series(console: FrameLocator, chart: str, script: str) -> object:
    """``script`` (of ``option``) on the ECharts option of the sweep page's chart ``chart``."""
    return console.locator(f"#charts [data-chart={chart}] .plot").evaluate(
        f"plot => (option => {script})(echarts.getInstanceByDom(plot).getOption())"
    )


def test_a_sweep_from_the_task_page_to_its_trials_charts(airflow: LiveAirflow) -> None:
    task = httpx.post(
        f"{airflow.url}/octotrain/api/v1/tasks",
        json=VALID_TASK | {"name": "sweep-browser", "parameters": {"learning_rate": 0.02}},
        headers=airflow.admin_headers(),
        timeout=HTTP_SECONDS,
    )
    assert task.status_code == 201, task.text
    task_id = task.json()["id"]
    with live_catalog(airflow) as catalog:
        sweep_id = finished_sweep(catalog, task_id)
    with chromium() as browser:
        page = signed_in(browser.new_context(viewport={"width": 1100, "height": 900}), airflow)
        page.goto(f"{airflow.url}/plugin/octotrain-tasks/octotrain/ui/tasks/{task_id}")
        console = _console(page)
        listed = console.locator(f"#sweep-list tr[data-sweep='{sweep_id}']")
        expect(listed).to_contain_text("lr-search")
        expect(listed).to_contain_text("24 of 24 done · 4 pruned")
        expect(console.locator("#runs .trial-of").first).to_contain_text("trial 23 of lr-search")
        listed.scroll_into_view_if_needed()
        page.screenshot(path=screenshot_path("sweep-task-page-light-1100"))

        console.locator("#new-sweep").click()
        expect(console.locator("#sweep-form[data-ready=true]")).to_be_attached()
        row = console.locator("#sweep-parameters tr[data-parameter=learning_rate]")
        expect(row.locator("select")).to_have_value("range")  # a float varies by default
        expect(row.get_by_label("learning_rate low")).to_have_value("0.002")  # around 0.02
        row.get_by_label("learning_rate high").fill("50")
        console.locator("#create-sweep").click()
        summary = console.locator("#form-problems")
        expect(summary).to_be_focused()
        expect(summary).to_contain_text("2 problems")
        expect(console.locator("[data-error-for='parameters.learning_rate']")).to_have_text(
            "high: must lie within the parameter's bounds [0.0, 10.0], got 50"
        )
        expect(row.get_by_label("learning_rate high")).to_have_attribute("aria-invalid", "true")
        expect(console.locator("[data-error-for='objective.chart']")).to_contain_text(
            "'fit' is not a chart algorithm linear-regression-numpy writes"
        )
        page.screenshot(path=screenshot_path("sweep-form-refused-light-1100"))

        console.get_by_role("link", name="Back to the task").click()
        console.locator(f"#sweep-list tr[data-sweep='{sweep_id}'] a.sweep-link").click()
        sweep = console.locator("#sweep-page[data-ready=true]")
        expect(sweep).to_be_attached()
        expect(page).to_have_url(re.compile(rf"/octotrain/ui/sweeps/{sweep_id}$"))
        expect(console.locator("#sweep-state")).to_have_text("finished")
        expect(console.locator("#trials tbody tr")).to_have_count(24)
        pruned = console.locator("#trials tr[data-state=pruned] .state-pruned")
        expect(pruned).to_have_count(4)
        expect(console.locator("#best-model")).to_contain_text("house-price-model v")
        # what it ran with: the two searched values and the fixed epochs
        expect(console.locator("#best-parameters code")).to_have_count(3)
        expect(console.locator("#rerun-best")).to_be_visible()
        expect(console.locator("#stop-sweep")).to_be_hidden()  # it has ended
        expect(console.locator("#charts .chart-card")).to_have_count(5)
        assert int(sweep.get_attribute("data-drawn-in-ms") or "0") < DRAWN_WITHIN_MS
        assert _series(console, "parallel", "option.series[0].type") == "parallel"
        assert _series(console, "parameter-learning_rate", "option.xAxis[0].type") == "log"
        faded = _series(console, "curves", "option.series.map(s => [s.z, s.lineStyle.opacity])")
        assert isinstance(faded, list) and len(faded) == 24
        assert sorted({tuple(item) for item in faded}) == [(1, 0.45), (2, 0.9)]
        page.set_viewport_size({"width": 1100, "height": 1600})
        page.screenshot(path=screenshot_path("sweep-page-light-1100"))
        page.emulate_media(color_scheme="dark")
        expect(console.locator("html")).to_have_attribute("data-theme", "dark")
        page.screenshot(path=screenshot_path("sweep-page-dark-1100"))
        page.emulate_media(color_scheme="light")

        picks = console.locator("#trials tr[data-state=success] input.compare-pick")
        picks.nth(0).check()
        picks.nth(1).check()
        console.locator("#compare-trials").click()
        expect(page).to_have_url(re.compile(r"/octotrain/ui/compare\?runs=\d+,\d+$"))
