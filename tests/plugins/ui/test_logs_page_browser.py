"""The Logs page in headless chromium: the files by node, the view opening at the end and
following new lines, earlier lines, search with highlights and next, downloads, and log text
that looks like HTML shown as text; its texts readable in the light and the dark theme.
Screenshots go to test-artifacts/."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from octotrain.contracts import NodeLogNames, dag_id_for
from octotrain.planning import run_key
from octotrain.settings import get_settings
from plugins.app import create_app
from tests.browser import chromium, screenshot_path, serving
from tests.factories import VALID_TASK
from tests.plan_rows import recorded
from tests.plugins.api.conftest import Api, token

NODES = ["distributed-0", "distributed-1"]
RUN_ID = "manual__2026-12-02T10:00:00+00:00"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def make_run(api: Api) -> tuple[int, Path]:
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": "browser-logs"}, headers=api.as_user("alice")
    ).json()
    with default_catalog().session() as session:
        plan = recorded(run_key=run_key(RUN_ID), node_indices=NODES)
        session.add(Run(task_id=task["id"], airflow_run_id=RUN_ID, state=RunState.RUNNING,
                        node_count=2, plan=plan))  # fmt: skip
    logs = get_settings().runs_dir / str(task["id"]) / run_key(RUN_ID) / "logs"
    logs.mkdir(parents=True)
    lines = [f"\x1b[36mepoch {n}\x1b[0m loss={1 / n:.4f}\n" for n in range(1, 301)]
    lines[149] = "ERROR rare one: gradient overflow\n"
    lines[249] = "ERROR rare two: <script>window.hacked = 1</script> <b>bold</b>\n"
    (logs / NodeLogNames(task["id"], "distributed-0").train).write_text("".join(lines))
    (logs / NodeLogNames(task["id"], "distributed-0").init).write_text("staged 1 file\n")
    (logs / NodeLogNames(task["id"], "distributed-1").train).write_text("rank 1 waiting\n")
    return task["id"], logs


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_the_logs_page_in_a_browser(api: Api, browser: Browser) -> None:
    task_id, logs = make_run(api)
    train = logs / NodeLogNames(task_id, "distributed-0").train
    with serving(create_app()) as base:
        context = browser.new_context(accept_downloads=True)
        context.add_cookies([{"name": "_token", "value": token("alice"), "url": base}])
        page = context.new_page()
        page.goto(f"{base}/ui/dags/{dag_id_for(task_id)}/runs/{quote(RUN_ID)}/logs")
        expect(page.locator("#log-list li")).to_have_count(3)
        expect(page.locator("#log-list h2")).to_have_text(NODES)
        lines = page.locator("#lines .line")
        expect(lines.last).to_have_text("epoch 300 loss=0.0033")  # opened at the end, no ANSI
        expect(lines).to_have_count(200)
        # each line beside its number in the file (not part of its text, nor of a copy)
        expect(lines.last).to_have_attribute("data-line", "300")
        expect(lines.first).to_have_attribute("data-line", "101")
        script_line = page.locator("#lines .line", has_text="rare two")
        expect(script_line).to_contain_text("<script>window.hacked = 1</script> <b>bold</b>")
        assert page.evaluate("window.hacked") is None
        assert page.locator("#lines b, #lines script").count() == 0
        page.screenshot(path=screenshot_path("logs-page-tail"), full_page=True)

        with train.open("a") as log:  # the run goes on: the view follows
            log.write("epoch 301 loss=0.0033\n")
        expect(lines.last).to_have_text("epoch 301 loss=0.0033")

        search(page, "error")
        hits = page.locator("#search-hits li")
        expect(hits).to_have_count(2)
        expect(page.locator("#search-hits mark").first).to_have_text("ERROR")
        expect(page.locator("#lines .line.hit")).to_contain_text("rare one")
        expect(page.locator("#lines .line.hit")).to_have_attribute("data-line", "150")
        page.click("#search-next")
        expect(page.locator("#lines .line.hit")).to_contain_text("rare two")
        expect(hits.nth(1)).to_have_class("current")
        expect(page.locator("#search-previous")).to_be_enabled()
        page.screenshot(path=screenshot_path("logs-page-search"), full_page=True)
        assert_readable(page)
        # Airflow's dark theme (outside Airflow: the browser's scheme), followed at once
        page.emulate_media(color_scheme="dark")
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        for width in (1600, 1100):
            page.set_viewport_size({"width": width, "height": 800})
            page.screenshot(path=screenshot_path(f"logs-page-search-dark-{width}"), full_page=True)
        assert_readable(page)

        page.select_option("#search-scope", "node")
        search(page, "(unclosed", regex=True)
        expect(page.locator("#search-status")).to_contain_text("not a valid regular expression")

        page.click(f"#log-list li[data-name='{train.name}'] a.name")
        expect(page.locator("#earlier")).to_be_visible()
        page.click("#earlier")
        expect(lines.first).to_have_text("epoch 1 loss=1.0000")
        expect(page.locator("#earlier")).to_be_hidden()

        with page.expect_download() as download:
            page.click(f"#log-list li[data-name='{train.name}'] a[download]")
        assert download.value.suggested_filename == train.name
        assert Path(download.value.path()).read_bytes() == train.read_bytes()

        # At 1100 px the log gets the width: the file list folds behind "Files"
        narrow = context.new_page()
        narrow.set_viewport_size({"width": 1100, "height": 800})
        narrow.goto(f"{base}/ui/dags/{dag_id_for(task_id)}/runs/{quote(RUN_ID)}/logs")
        expect(narrow.locator("#lines .line").last).to_contain_text("loss=")
        expect(narrow.locator("#log-list")).to_be_hidden()
        narrow.click("#toggle-files")
        narrow.click(f"#log-list li[data-name='{train.name}'] a.name")
        expect(narrow.locator("#log-list")).to_be_hidden()  # folded again once a file is chosen
        narrow.screenshot(path=screenshot_path("logs-page-1100"))
        context.close()


# The contrast of each element's text against the background behind it (the nearest ancestor's
# that is not transparent), by WCAG's formula; colours of any CSS syntax, read through a canvas.
CONTRASTS = """(selectors) => {
  const probe = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
  const rgb = (colour) => {
    probe.clearRect(0, 0, 1, 1); probe.fillStyle = colour; probe.fillRect(0, 0, 1, 1);
    return probe.getImageData(0, 0, 1, 1).data;
  };
  const light = (colour) => {
    const [r, g, b] = [...rgb(colour)].slice(0, 3).map((v) => {
      const c = v / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const behind = (node) => {
    for (let at = node; at; at = at.parentElement) {
      const colour = getComputedStyle(at).backgroundColor;
      if (rgb(colour)[3] > 0) return colour;
    }
    return getComputedStyle(document.documentElement).backgroundColor;
  };
  return Object.fromEntries(selectors.map((selector) => {
    const node = document.querySelector(selector);
    const [one, other] = [light(getComputedStyle(node).color), light(behind(node))];
    return [selector, (Math.max(one, other) + 0.05) / (Math.min(one, other) + 0.05)];
  }));
}"""
READABLE = ["h1", "#log-list h2", "#log-list a.name", "#log-list .muted", "#file-name",
            "#search-hits li.current", "#search-hits .context", "#search-hits mark",
            "#search-status", "#lines .line", "#search-text",
            "#search button[type=submit]"]  # fmt: skip


def assert_readable(page: Page) -> None:
    """The page's texts keep a contrast of at least 4.5:1 (WCAG AA) in the current theme."""
    contrasts = page.evaluate(CONTRASTS, READABLE)
    assert all(ratio >= 4.5 for ratio in contrasts.values()), {
        k: v for k, v in contrasts.items() if v < 4.5
    }


def search(page: Page, text: str, *, regex: bool = False) -> None:
    page.fill("#search-text", text)
    if page.is_checked("#search-regex") != regex:
        page.click("#search-regex")
    started = time.monotonic()
    page.click("#search button[type=submit]")
    expect(page.locator("#search-status")).not_to_have_text("Searching…")
    assert time.monotonic() - started < 10
