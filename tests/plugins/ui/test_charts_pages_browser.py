"""The Metrics and Resources pages in headless chromium: six charts (one with two y axes, one
with four series), PNG and CSV downloads, smoothing, zoom and its reset, the meta file's
problems and the run's texts shown as text; resource legend clicks and double clicks, a node
lacking pynvml. Screenshots go to test-artifacts/."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect

from hooks.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from octotrain.contracts import dag_id_for
from octotrain.planning import run_key
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from plugins.api.app import create_app
from tests.browser import chromium, screenshot_path, serving
from tests.factories import VALID_TASK
from tests.plugins.api.conftest import Api, token

NODES = ["distributed-0", "distributed-1"]
RUN_ID = "scheduled__2026-12-01T00:00:00+00:00"
HOSTILE = '<img src=x onerror="window.hacked=1">'
METAS = [
    {"name": "loss", "x": "step", "ys": ["loss", "lr"], "description": "loss-and-learning-rate",
     "smooth": "true", "with_timestamp": "true"},
    {"name": "per-class", "x": "epoch", "ys": ["f1"], "series": ["cat", "dog", "cow", "owl"],
     "description": "F1-by-class", "smooth": "false"},
    *({"name": f"m{n}", "x": "step", "ys": ["value"], "description": f"metric-{n}"}
      for n in range(3)),
    # refused (a description is letters, digits, - and _), so quoted among the notices
    {"name": "hostile", "x": "step", "ys": ["v"], "description": HOSTILE},
    {"name": "<script>", "x": "step", "ys": ["v"], "description": "refused"},
]  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def points(meta: dict, count: int) -> list[dict[str, float]]:
    lines = meta.get("series") or meta["ys"]
    rows = []
    for step in range(count):
        row = {meta["x"]: step, "timestamp": 1_764_000_000 + 10 * step}
        for number, line in enumerate(lines):
            row[line] = math.sin(step / 15 + number) + (step % 7) * 0.05 + number
        rows.append(row)
    return rows


def make_run(api: Api, name: str) -> tuple[int, RunLayout]:
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": name}, headers=api.as_user("alice")
    ).json()
    with default_catalog().session() as session:
        plan = {"run_key": run_key(RUN_ID), "node_indices": NODES}
        session.add(Run(task_id=task["id"], airflow_run_id=RUN_ID, state=RunState.SUCCESS,
                        node_count=2, plan=plan))  # fmt: skip
    layout = RunLayout(get_settings().runs_dir, task["id"], run_key(RUN_ID))
    folder = layout.node_folders("distributed-0").metrics
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps({"id": str(task["id"]), "metas": METAS}))
    for meta in METAS[:6]:
        rows = points(meta, 300)
        text = "".join(json.dumps(row) + "\n" for row in rows)
        (folder / f"{meta['name']}.jsonl").write_text(text + "not json\n")
    for node, gpus, missing in (("distributed-0", 2, []), ("distributed-1", 0, ["pynvml"])):
        samples = [{"timestamp": 1.0, "missing": missing}] if missing else []
        for n in range(60):
            sample = {"timestamp": 1_764_000_000 + 2 * n, "cpu_percent": 50 + n % 9,
                      "memory_percent": 30.0, "memory_bytes": 10**9}  # fmt: skip
            if gpus:
                sample["gpus"] = [{"index": g, "utilization_percent": 80.0 - 10 * g,
                                   "memory_percent": 40.0} for g in range(gpus)]  # fmt: skip
            samples.append(sample)
        path = layout.resources_path(node)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(sample) + "\n" for sample in samples))
    return task["id"], layout


X_EXTENT = "c.getModel().getComponent('xAxis', 0).axis.scale.getExtent()"
ANIMATIONS_ENDED = """() => [...document.querySelectorAll('.chart-card .plot')].every(
    (plot) => echarts.getInstanceByDom(plot).getZr().animation.isFinished())"""


def chart_function(chart: str, expression: str) -> str:
    """A JavaScript function returning ``expression`` of the ECharts instance ``c`` of the card
    ``chart``."""
    return f"""() => {{ const c = echarts.getInstanceByDom(
                document.querySelector('[data-chart="{chart}"] .plot')); return {expression}; }}"""


def option(page: Page, chart: str, expression: str) -> object:
    """``expression`` of the ECharts instance ``c`` of the card ``chart``, now."""
    return page.evaluate(chart_function(chart, expression))


def x_extent(page: Page, chart: str) -> list[float]:
    return option(page, chart, X_EXTENT)  # type: ignore[return-value]


def x_extent_once(page: Page, chart: str, holds: str) -> list[float]:
    """The x axis's extent of ``chart`` once ``holds`` (JavaScript of ``lo`` and ``hi``, its
    ends) is true: ECharts applies a zoom on a later frame, not at once."""
    page.wait_for_function(chart_function(chart, f"(([lo, hi]) => {holds})({X_EXTENT})"))
    return x_extent(page, chart)


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_the_metrics_page_in_a_browser(api: Api, browser: Browser) -> None:
    task_id, _ = make_run(api, "browser-metrics")
    with serving(create_app()) as base:
        context = browser.new_context(
            accept_downloads=True, viewport={"width": 1400, "height": 1000}
        )
        context.add_cookies([{"name": "_token", "value": token("alice"), "url": base}])
        page = context.new_page()
        page.goto(f"{base}/ui/dags/{dag_id_for(task_id)}/runs/{quote(RUN_ID)}/metrics")
        cards = page.locator(".chart-card")
        expect(cards).to_have_count(5)
        expect(page.locator(".chart-card canvas")).to_have_count(5)
        # each chart fetches its points on its own and says how many once it has drawn them
        expect(page.locator(".chart-card .skipped")).to_contain_text(["points"] * 5)
        expect(page.locator("#notices")).to_contain_text('at most 6 charts; not shown: "<script>"')
        expect(page.locator("#notices")).to_contain_text("<img src=x onerror=")  # text, not HTML
        assert page.evaluate("window.hacked") is None and page.locator("body img").count() == 0
        expect(page.locator("[data-chart=loss] .skipped")).to_contain_text(
            "1 unreadable lines skipped"
        )
        page.wait_for_function(ANIMATIONS_ENDED)  # for the screenshot
        page.screenshot(path=screenshot_path("metrics-page"), full_page=True)

        # two y axes, four series
        assert option(page, "loss", "c.getOption().yAxis.length") == 2
        assert option(page, "per-class", "c.getOption().series.map((s) => s.name)") == [
            "cat", "dog", "cow", "owl",
        ]  # fmt: skip

        # smoothing: on by the meta file (raw line faint behind), off, and the weight
        raw = [row["loss"] for row in points(METAS[0], 300)]
        names = option(page, "loss", "c.getOption().series.map((s) => s.name)")
        assert names == ["loss (raw)", "loss", "lr (raw)", "lr"]
        smoothed = option(page, "loss", "c.getOption().series[1].data.map((p) => p[1])")
        assert smoothed != raw and smoothed[0] == pytest.approx(raw[0])  # type: ignore[index]
        page.locator("[data-chart=loss] input.smooth").uncheck()
        assert option(page, "loss", "c.getOption().series.length") == 2
        assert option(
            page, "loss", "c.getOption().series[0].data.map((p) => p[1])"
        ) == pytest.approx(raw)
        page.locator("[data-chart=loss] input.smooth").check()
        page.locator("[data-chart=loss] input.weight").fill("0.9")
        heavier = option(page, "loss", "c.getOption().series[1].data.map((p) => p[1])")
        assert heavier != smoothed

        # zoom with the mouse wheel, then the reset; wall time on the x axis
        full = x_extent(page, "m0")
        page.locator("[data-chart=m0] .plot").hover()
        page.mouse.wheel(0, -600)
        zoomed = x_extent_once(page, "m0", f"hi - lo < {full[1] - full[0]!r}")
        assert zoomed[0] >= full[0] and zoomed[1] <= full[1]
        page.locator("[data-chart=m0] button", has_text="Reset zoom").click()
        assert x_extent_once(page, "m0", f"lo === {full[0]!r} && hi === {full[1]!r}") == full
        page.locator("[data-chart=loss] select.x-axis").select_option("time")
        assert option(page, "loss", "c.getOption().xAxis[0].type") == "time"

        # downloads: a PNG, and the raw points as CSV
        with page.expect_download() as png:
            page.locator("[data-chart=m1] button", has_text="PNG").click()
        assert Path(png.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with page.expect_download() as table:
            page.locator("[data-chart=per-class] a", has_text="CSV").click()
        rows = list(csv.reader(io.StringIO(Path(table.value.path()).read_text())))
        expected = points(METAS[1], 300)
        assert rows[0] == ["epoch", "cat", "dog", "cow", "owl"] and len(rows) == 301
        assert [float(value) for value in rows[150]] == pytest.approx(
            [expected[149][key] for key in ("epoch", "cat", "dog", "cow", "owl")], rel=1e-15
        )
        context.close()


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_the_resources_page_in_a_browser(api: Api, browser: Browser) -> None:
    task_id, _ = make_run(api, "browser-resources")
    with serving(create_app()) as base:
        context = browser.new_context(viewport={"width": 1200, "height": 800})
        context.add_cookies([{"name": "_token", "value": token("alice"), "url": base}])
        page = context.new_page()
        page.goto(f"{base}/ui/dags/{dag_id_for(task_id)}/runs/{quote(RUN_ID)}/resources")
        expect(page.locator(".chart-card canvas")).to_have_count(1)
        page.locator(".chart-card").first.evaluate("(card) => card.dataset.chart = 'resources'")
        names = option(page, "resources", "c.getOption().series.map((s) => s.name)")
        assert names == ["CPU %", "Memory %", "GPU 0 utilisation %", "GPU 0 memory %",
                         "GPU 1 utilisation %", "GPU 1 memory %"]  # fmt: skip
        selected = "c.getOption().legend[0].selected"
        assert [name for name, on in option(page, "resources", selected).items() if on] == ["CPU %"]
        toggle = "c.dispatchAction({type: 'legendToggleSelect', name: 'GPU 1 utilisation %'})"
        option(page, "resources", toggle)  # what a click on the legend entry does
        shown = option(page, "resources", selected)
        assert [name for name, on in shown.items() if on] == ["GPU 1 utilisation %"]
        page.wait_for_timeout(600)  # a pause longer than a double click's 400 ms: time passing
        option(page, "resources", f"({toggle}, {toggle})")  # a double click: every line
        assert all(option(page, "resources", selected).values())
        page.screenshot(path=screenshot_path("resources-page"), full_page=True)
        expect(page.locator("#node-choice")).to_be_visible()
        page.select_option("#node", "distributed-1")
        expect(page.locator("#notices")).to_contain_text(
            "The image of node distributed-1 lacks pynvml"
        )
        expect(page.locator(".chart-card canvas")).to_have_count(1)
        context.close()
