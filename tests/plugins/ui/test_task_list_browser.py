"""The console's entry in Airflow's navigation and its task list, in headless chromium inside
a real Airflow (the session's live Airflow, ``airflow``), in the light and the dark theme at
1100 and 1600 px: the entry's label whole and its icon the theme's; the list filtered, sorted
and paged by clicks, with nothing cut off and names on one line. Screenshots go to
test-artifacts/."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import FrameLocator, Locator, Page, expect

from tests.browser import chromium, screenshot_path
from tests.factories import VALID_TASK
from tests.live_airflow import HTTP_SECONDS, LiveAirflow
from tests.plugins.ui.inside_airflow import airflow_frame, signed_in

# Twelve tasks, so that ten a page makes two pages; one name long and Chinese.
DASH = "\N{EN DASH}"  # between the first and last position the pager shows
NAMES = ["list-page-房价回归-每日增量训练-上海地区", *(f"list-page-{n:02}" for n in range(11))]


@pytest.fixture
def listed_tasks(airflow: LiveAirflow) -> Iterator[list[str]]:
    """``NAMES`` as tasks of the demo project, deleted again (the session's Airflow is shared)."""
    headers = airflow.admin_headers()
    ids = []
    for priority, name in enumerate(NAMES):
        created = httpx.post(f"{airflow.url}/octotrain/api/v1/tasks", headers=headers,
                             json=VALID_TASK | {"name": name, "priority": priority},
                             timeout=HTTP_SECONDS)  # fmt: skip
        assert created.status_code == 201, created.text
        ids.append(created.json()["id"])
    yield NAMES
    for task_id in ids:
        httpx.delete(f"{airflow.url}/octotrain/api/v1/tasks/{task_id}", headers=headers,
                     timeout=HTTP_SECONDS)  # fmt: skip


def fits_without_scrolling(element: Locator) -> bool:
    return bool(element.evaluate("e => e.scrollWidth <= e.clientWidth"))


def check_nav_entry(page: Page, theme: str) -> None:
    """The entry's label is whole (Airflow cuts a long one with an ellipsis) and its icon is
    the theme's, loaded (served behind Airflow's login)."""
    entry = page.get_by_role("link", name="Training", exact=True)
    expect(entry).to_be_visible()
    label = entry.get_by_text("Training", exact=True)
    assert fits_without_scrolling(label)
    icon = entry.locator("img")
    expect(icon).to_have_attribute("src", re.compile(f"/nav_icon_{theme}\\.svg$"))
    page.wait_for_function("icon => icon.complete && icon.naturalWidth > 0",
                           arg=icon.element_handle())  # fmt: skip


def check_fits(console: FrameLocator) -> None:
    """Nothing cut off or scrolled sideways; the long Chinese name on one line."""
    assert fits_without_scrolling(console.locator(".table-wrap"))
    assert fits_without_scrolling(console.locator("html"))
    name = console.locator("a.task-name", has_text="房价回归")
    if name.count():
        assert name.evaluate("a => a.getClientRects().length === 1 && a.offsetHeight < 24")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_nav_entry_and_the_task_list_sorted_and_paged_by_clicks(
    airflow: LiveAirflow, listed_tasks: list[str], theme: str
) -> None:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1100, "height": 900}, color_scheme=theme)
        page = signed_in(context, airflow)
        page.goto(f"{airflow.url}/plugin/octotrain-tasks")
        check_nav_entry(page, theme)
        console = airflow_frame(page, "Training")
        expect(console.locator("html")).to_have_attribute("data-theme", theme)

        console.get_by_role("searchbox").fill("list-page")
        console.get_by_label("Tasks per page").select_option("10")
        console.get_by_role("button", name="Filter").click()
        expect(console.locator("a.task-name")).to_have_count(10)
        expect(console.locator(".pager")).to_contain_text(f"1{DASH}10 of 12")
        check_fits(console)
        page.screenshot(path=screenshot_path(f"task-list-1100-{theme}"))

        console.get_by_role("link", name="Task", exact=True).click()
        expect(console.locator("th[aria-sort]")).to_have_attribute("aria-sort", "ascending")
        expect(console.locator("th[aria-sort]")).to_contain_text("Task")
        expect(console.locator("a.task-name")).to_have_text(sorted(listed_tasks)[:10])
        console.get_by_role("link", name="Task", exact=True).click()
        expect(console.locator("th[aria-sort]")).to_have_attribute("aria-sort", "descending")
        expect(console.locator("a.task-name")).to_have_text(sorted(listed_tasks)[::-1][:10])

        console.get_by_role("link", name="Page 2").click()
        expect(console.locator(".pager")).to_contain_text(f"11{DASH}12 of 12")
        expect(console.locator("a.task-name")).to_have_text(sorted(listed_tasks)[::-1][10:])
        expect(console.get_by_role("searchbox")).to_have_value("list-page")  # the filter holds
        expect(page).to_have_url(
            re.compile(r"/plugin/octotrain-tasks/octotrain/ui/tasks\?.*page=2")
        )
        console.get_by_role("link", name="Priority", exact=True).click()  # highest first
        expect(console.locator("th[aria-sort]")).to_have_attribute("aria-sort", "descending")
        expect(console.locator("a.task-name")).to_have_text(listed_tasks[::-1][:10])
        expect(console.locator(".pager")).to_contain_text(f"1{DASH}10 of 12")  # a new order: page 1

        page.set_viewport_size({"width": 1600, "height": 900})
        check_fits(console)
        page.screenshot(path=screenshot_path(f"task-list-1600-{theme}"))
        console.get_by_role("link", name="Next").click()
        expect(console.locator("a.task-name")).to_have_text(listed_tasks[1::-1])
        console.get_by_role("link", name="Previous").click()
        expect(console.locator(".pager")).to_contain_text(f"1{DASH}10 of 12")
        expect(console.get_by_role("link", name="Previous")).to_have_count(0)
