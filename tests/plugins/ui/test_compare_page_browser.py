"""The comparison of runs in headless chromium, light and dark theme (screenshots in
test-artifacts/): runs ticked on the task page, Compare, then the parameters side by side with the
differing ones marked, the final values, a chart per chart name with a line per run (the legend
names the runs) and the trend of the task's retraining runs; runs that cannot be compared are
answered on the page, naming the field."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from octotrain.catalog.compared_runs import ADDABLE_RUNS_PER_TASK
from plugins.app import create_app
from tests.browser import chromium, screenshot_path, serving
from tests.plugins.api.conftest import Api, token
from tests.plugins.api.test_compare_routes import (
    ACCURACY,
    BOBS_TASK,
    START,
    loss,
    new_run,
    new_task,
    runs,
)

DAY = timedelta(days=1)


def series_names(page: Page, selector: str) -> list[str]:
    """The names of the lines ECharts draws in the chart of ``selector`` (its legend)."""
    names = page.eval_on_selector(
        selector, "box => echarts.getInstanceByDom(box.querySelector('.plot'))"
        ".getOption().series.map(line => line.name)",
    )  # fmt: skip
    return [str(name) for name in names]


def decaying(scale: float, steps: int) -> tuple[dict[str, Any], list[dict[str, float]]]:
    """A loss chart of ``scale / (step + 1)`` every 5 steps below ``steps``."""
    return loss(*((step, scale / (step + 1)) for step in range(0, steps, 5)))


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_comparing_runs_in_a_browser(api: Api) -> None:
    task = new_task(api, "compare-browser")
    accuracy = (
        ACCURACY,
        [{"epoch": epoch, "top1": 0.5 + epoch / 20, "top5": 0.9} for epoch in range(6)],
    )
    first = new_run(task, "p1", trigger="scheduled", started_at=START,
                    parameters={"lr": 0.1, "epochs": 5, "optimizer": "adam"},
                    charts={"loss": decaying(2.0, 50)})  # fmt: skip
    second = new_run(task, "p2", trigger="scheduled", started_at=START + DAY,
                     parameters={"lr": 0.01, "epochs": 5, "optimizer": "adam"},
                     charts={"loss": decaying(1.5, 60),
                             "acc": accuracy})  # fmt: skip
    new_run(task, "p3", trigger="scheduled", started_at=START + 2 * DAY,
            parameters={"lr": 0.01, "epochs": 8, "optimizer": "adam"},
            charts={"loss": loss((0, 1.0), (50, 0.03))})  # fmt: skip
    with chromium() as browser, serving(create_app()) as base:
        context = browser.new_context(viewport={"width": 1200, "height": 800})
        context.add_cookies([{"name": "_token", "value": token("alice"), "url": base}])
        page = context.new_page()
        page.goto(f"{base}/ui/tasks/{task}")
        compare = page.locator("#compare-runs")
        expect(page.locator("#runs tbody tr")).to_have_count(3)
        expect(compare).to_be_disabled()
        page.locator(f"#runs tr[data-run='{first}'] input.compare-pick").check()
        expect(compare).to_be_disabled()  # one run is not a comparison
        page.locator(f"#runs tr[data-run='{second}'] input.compare-pick").check()
        expect(compare).to_be_enabled()
        page.screenshot(path=screenshot_path("compare-task-page-picked"), full_page=True)
        compare.click()

        page.wait_for_url(f"**/ui/compare?runs={first},{second}")
        expect(page.locator("#compare-page")).to_have_attribute("data-loaded", "true")
        expect(page.locator("#compare-table thead th a")).to_have_text([f"#{first}", f"#{second}"])
        expect(page.locator("#compare-table tr.differs")).to_have_count(1)
        expect(page.locator("#compare-table tr.differs td")).to_have_text(["0.1", "0.01"])
        expect(page.locator("#compare-table tr.parameter")).to_have_count(3)
        expect(page.locator("#finals-table tr[data-chart=loss] td")).to_have_text(
            ["0.0434783", "0.0267857"]
        )
        expect(page.locator("#finals-table tr[data-chart=acc] td")).to_have_text(
            ["—", "0.75", "—", "0.9"]
        )
        # the best final value of each line marked: the lowest loss, the highest accuracy
        expect(page.locator("#finals-table tr[data-chart=loss] td.best")).to_have_text("0.0267857")
        expect(page.locator("#finals-table td.best")).to_have_count(1)  # acc: one run has it
        expect(page.locator("#back")).to_have_text("Back to compare-browser")
        expect(page.locator("#charts .chart-card")).to_have_count(2)
        expect(page.locator("#charts [data-chart=acc] h2")).to_contain_text(
            f"not declared by #{first}"
        )
        assert series_names(page, "#charts [data-chart=loss]") == [f"#{first}", f"#{second}"]
        assert series_names(page, "#charts [data-chart=acc]") == [
            f"#{second} · top1",
            f"#{second} · top5",
        ]
        # the chart's second line on an axis of its own, as on the run page
        acc_axes = page.eval_on_selector(
            "#charts [data-chart=acc]", "box => echarts.getInstanceByDom(box.querySelector"
            "('.plot')).getOption().yAxis.map(axis => [axis.name, axis.position])",
        )  # fmt: skip
        assert acc_axes == [["top1", "left"], ["top5", "right"]]
        # smoothing as on the run page: each run's raw line faint behind its smoothed one
        page.locator("#charts [data-chart=loss] input.smooth").check()
        expect(page.locator("#charts [data-chart=loss] input.smooth")).to_be_checked()
        assert series_names(page, "#charts [data-chart=loss]") == [
            f"#{first} (raw)", f"#{first}", f"#{second} (raw)", f"#{second}",
        ]  # fmt: skip
        trend = page.locator("#trend [data-trend=loss]")
        expect(trend.locator("h2")).to_contain_text("3 of 3 runs")
        expect(page.locator("#trend [data-trend=acc] h2")).to_contain_text("1 of 3 runs")
        assert series_names(page, "#trend [data-trend=loss]") == ["loss"]
        page.screenshot(path=screenshot_path("compare-page-light"), full_page=True)
        page.emulate_media(color_scheme="dark")
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        page.screenshot(path=screenshot_path("compare-page-dark"), full_page=True)

        page.locator("#only-differing").check()
        expect(page.locator("#compare-table tr.parameter:visible")).to_have_count(1)

        # A run of another task of the project is added from the page, then one is removed
        other = new_task(api, "compare-other")
        added = new_run(other, "o1", started_at=START + 3 * DAY, parameters={"lr": 0.05},
                        charts={"loss": decaying(1.0, 40)})  # fmt: skip
        page.reload()
        expect(page.locator("#compare-page")).to_have_attribute("data-loaded", "true")
        offered = page.get_by_label("Run to add")
        expect(offered.locator(f"option[value='{added}']")).to_contain_text(
            f"compare-other · #{added}, success, started 2026-11-04"
        )
        offered.select_option(str(added))
        page.get_by_role("button", name="Add", exact=True).click()
        page.wait_for_url(f"**/ui/compare?runs={first},{second},{added}")
        expect(page.locator("#compare-page")).to_have_attribute("data-loaded", "true")
        labels = [f"compare-browser · #{first}", f"compare-browser · #{second}",
                  f"compare-other · #{added}"]  # fmt: skip
        expect(page.locator("#compare-table thead th a:not(.remove-run)")).to_have_text(labels)
        assert series_names(page, "#charts [data-chart=loss]") == labels
        page.screenshot(path=screenshot_path("compare-page-added-dark"), full_page=True)
        page.get_by_role("link", name=f"Remove {labels[0]} from the comparison").click()
        page.wait_for_url(f"**/ui/compare?runs={second},{added}")
        expect(page.locator("#compare-table a.remove-run")).to_have_count(0)  # two stay two

        page.goto(f"{base}/ui/compare?runs={first}")
        expect(page.locator("[data-error-for=runs]")).to_contain_text("runs: compare 2 to 8 runs")
        page.emulate_media(color_scheme="light")
        page.screenshot(path=screenshot_path("compare-page-refused"), full_page=True)


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_runs_to_add_are_the_project_s_latest_a_few_a_task(api: Api) -> None:
    task, other = new_task(api, "compare-add-a"), new_task(api, "compare-add-b")
    chosen = [new_run(task, f"a{number}", started_at=START + number * DAY) for number in (1, 2)]
    others = [new_run(other, f"b{number}", started_at=START + number * DAY) for number in range(12)]
    bobs = new_run(new_task(api, "compare-add-bob", "bob", BOBS_TASK), "x")  # never offered
    alice = api.as_user("alice")
    page = api.client.get(f"/ui/compare?runs={runs(*chosen)}", headers=alice).text
    group = page.split('label="compare-add-b"')[1].split("</optgroup>")[0]
    offered = [int(value) for value in re.findall(r'<option value="(\d+)"', group)]
    assert offered == others[::-1][:ADDABLE_RUNS_PER_TASK]  # the latest ten, newest first
    assert 'label="compare-add-a"' not in page  # its two runs are compared already
    assert f'value="{bobs}"' not in page
    added = api.client.get(
        f"/ui/compare?runs={runs(*chosen)}&add={others[0]}", headers=alice, follow_redirects=False
    )
    assert added.status_code == 303
    assert added.headers["location"] == f"compare?runs={runs(*chosen, others[0])}"
    eight = runs(*chosen, *others[:6])
    full = api.client.get(f"/ui/compare?runs={eight}", headers=alice).text
    assert 'class="add-run"' not in full  # eight runs: no more to add
    too_many = api.client.get(f"/ui/compare?runs={eight}&add={others[7]}", headers=alice)
    assert too_many.status_code == 400 and "compare 2 to 8 runs" in too_many.text


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_runs_that_cannot_be_compared_are_answered_on_the_page(api: Api) -> None:
    task = new_task(api, "compare-refused")
    one, two = new_run(task, "r1"), new_run(task, "r2")
    alice = api.as_user("alice")
    shown = api.client.get(f"/ui/compare?runs={one},{two}", headers=alice)
    assert shown.status_code == 200 and f"#{two}" in shown.text
    unknown = api.client.get(f"/ui/compare?runs={one},999999", headers=alice)
    assert unknown.status_code == 400
    assert "runs: no run 999999 in the projects you are a member of" in unknown.text
    hidden = api.client.get(f"/ui/compare?runs={one},{two}", headers=api.as_user("bob"))
    assert hidden.status_code == 400 and "no run" in hidden.text
    assert api.client.get("/ui/compare", headers=alice).status_code == 400


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_the_compare_scripts_are_served_behind_the_login(api: Api) -> None:
    for name in ("compare.js", "chart_theme.js"):
        script = api.client.get(f"/ui/static/{name}", headers=api.as_user("alice"))
        assert script.status_code == 200 and "echarts" in script.text.lower()
        assert "innerHTML" not in script.text  # run texts are never parsed as HTML
        assert api.client.get(f"/ui/static/{name}").status_code == 401
