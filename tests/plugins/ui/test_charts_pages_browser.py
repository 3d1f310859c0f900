"""The Metrics and Resources pages in headless chromium, light and dark (the browser's colour
scheme, as outside Airflow), at 1100 and 1600 px: six charts (one with two y axes, one with four
series), a titled PNG without the controls and the CSV, smoothing with the raw value in the
tooltip, zoom by the wheel (y following the data in view) and by a box (x and y) and its reset, a
log scale (refused for values <= 0), the meta file's problems and the run's texts shown as text,
the charts' colours following a theme change; resource legend clicks and double clicks, a node
lacking pynvml, a short run of a spec without GPUs (one sample with a marker, an x axis of
seconds, nothing about GPUs) and a run without samples. Screenshots go to test-artifacts/."""

from __future__ import annotations

import base64
import csv
import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from octotrain.contracts import dag_id_for
from octotrain.planning import run_key
from octotrain.run_layout import RunLayout
from octotrain.settings import get_settings
from plugins.app import create_app
from tests.browser import chromium, screenshot_path, serving
from tests.factories import VALID_TASK
from tests.plan_rows import recorded
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


def new_run(api: Api, name: str, gpus: int) -> tuple[int, RunLayout]:
    """A finished two-node run of a new task, planned with ``gpus`` GPUs per node."""
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": name}, headers=api.as_user("alice")
    ).json()
    with default_catalog().session() as session:
        plan = recorded(run_key=run_key(RUN_ID), node_indices=NODES,
                        resources={"spec": "small", "gpu_count": gpus})  # fmt: skip
        session.add(Run(task_id=task["id"], airflow_run_id=RUN_ID, state=RunState.SUCCESS,
                        node_count=2, plan=plan))  # fmt: skip
    return task["id"], RunLayout(get_settings().runs_dir, task["id"], run_key(RUN_ID))


def make_run(api: Api, name: str) -> tuple[int, RunLayout]:
    task_id, layout = new_run(api, name, gpus=2)
    folder = layout.node_folders("distributed-0").metrics
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps({"id": str(task_id), "metas": METAS}))
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
    return task_id, layout


def make_short_run(api: Api) -> int:
    """A run of a second on a spec without GPUs: one sample of distributed-0, taken by an image
    without pynvml; none of distributed-1."""
    task_id, layout = new_run(api, "browser-short-run", gpus=0)
    path = layout.resources_path("distributed-0")
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = [{"timestamp": SHORT_RUN_SAMPLE - 0.5, "missing": ["pynvml"]},
               {"timestamp": SHORT_RUN_SAMPLE, "cpu_percent": 37.5, "memory_percent": 12.0,
                "memory_bytes": 10**9}]  # fmt: skip
    path.write_text("".join(json.dumps(sample) + "\n" for sample in samples))
    return task_id


def write_decay(layout: RunLayout, chart: str) -> list[float]:
    """``chart``'s points as a loss falling from 1 to near 0; its values."""
    values = [1 / (step + 1) for step in range(300)]
    rows = [{"step": step, "value": value} for step, value in enumerate(values)]
    path = layout.node_folders("distributed-0").metrics / f"{chart}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return values


SHORT_RUN_SAMPLE = 1_764_000_000.0
X_EXTENT = "c.getModel().getComponent('xAxis', 0).axis.scale.getExtent()"
Y_EXTENT = "c.getModel().getComponent('yAxis', 0).axis.scale.getExtent()"
AXIS_LABEL_COLOUR = "c.getModel().getComponent('xAxis', 0).getModel('axisLabel').get('color')"
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


def extents_once(page: Page, chart: str, holds: str) -> tuple[list[float], list[float]]:
    """The x and y extents of ``chart`` once ``holds`` (JavaScript of ``x`` and ``y``, each
    ``[lo, hi]``) is true."""
    try:
        page.wait_for_function(
            chart_function(chart, f"((x, y) => {holds})({X_EXTENT}, {Y_EXTENT})")
        )
    except PlaywrightTimeoutError:
        extents = x_extent(page, chart), option(page, chart, Y_EXTENT)
        raise AssertionError(f"{chart}: never {holds}; x and y: {extents}") from None
    return x_extent(page, chart), option(page, chart, Y_EXTENT)  # type: ignore[return-value]


# The centre of the toolbox's icon titled ``title``, in the chart's pixels (drawn on its canvas).
TOOLBOX_ICON = """(() => {{
  const icon = c.getZr().storage.getDisplayList().find((shape) => shape.__title === "{title}");
  const rect = icon.getBoundingRect().clone();
  rect.applyTransform(icon.getComputedTransform());
  return {{ x: rect.x + rect.width / 2, y: rect.y + rect.height / 2 }};
}})()"""


def luminance(colour: object) -> float:
    """0 (black) to 1 (white) of an ``rgba(r, g, b, a)`` colour."""
    red, green, blue = (int(part) for part in str(colour)[5:-1].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


def significant(value: float) -> str:
    """``value`` to six significant digits as the charts' tooltip writes it (JavaScript's
    shortest form of the rounded number)."""
    rounded = float(f"{value:.6g}")
    return str(int(rounded)) if rounded.is_integer() else repr(rounded)


def screenshots(page: Page, name: str, theme: str) -> None:
    """Full-page screenshots at 1600 and 1100 px wide, once the charts have drawn."""
    for width in (1600, 1100):
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_function(ANIMATIONS_ENDED)
        page.screenshot(path=screenshot_path(f"{name}-{theme}-{width}"), full_page=True)


# Statistics of a downloaded PNG, measured by the page: its size, whether its title band has
# text, and whether the strip where the zoom slider was, and the corner of the toolbox, hold
# nothing but the background.
PNG_STATS = """async (data) => {
  const image = new Image();
  image.src = `data:image/png;base64,${data}`;
  await image.decode();
  const canvas = document.createElement("canvas");
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext("2d");
  context.drawImage(image, 0, 0);
  const colours = (x, y, w, h) => {
    const data = context.getImageData(x, y, w, h).data;
    const seen = new Set();
    for (let i = 0; i < data.length; i += 4) seen.add(`${data[i]},${data[i + 1]},${data[i + 2]}`);
    return seen.size;
  };
  return { width: image.width, height: image.height,
           title: colours(20, 20, 400, 40),
           slider: colours(160, image.height - 40, image.width - 320, 24),
           toolbox: colours(image.width - 160, 104, 150, 40) };
}"""


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_the_metrics_page_in_a_browser(api: Api, browser: Browser) -> None:
    task_id, layout = make_run(api, "browser-metrics")
    decay = write_decay(layout, "m2")
    with serving(create_app()) as base:
        url = f"{base}/ui/dags/{dag_id_for(task_id)}/runs/{quote(RUN_ID)}/metrics"
        context = browser.new_context(
            accept_downloads=True, viewport={"width": 1600, "height": 1000}, color_scheme="light"
        )
        context.add_cookies([{"name": "_token", "value": token("alice"), "url": base}])
        page = context.new_page()
        page.goto(url)
        cards = page.locator(".chart-card")
        expect(cards).to_have_count(5)
        expect(page.locator(".chart-card canvas")).to_have_count(5)
        # each chart fetches its points on its own and says how many once it has drawn them
        expect(page.locator(".chart-card .skipped")).to_contain_text(["points"] * 5)
        expect(page.locator("#notices")).to_contain_text('at most 6 charts; not shown: "<script>"')
        expect(page.locator("#notices")).to_contain_text("<img src=x onerror=")  # text, not HTML
        assert page.evaluate("window.hacked") is None and page.locator("body img").count() == 0
        expect(page.locator("[data-chart=loss] .skipped")).to_have_text(
            "300 points; 1 unreadable line skipped"
        )
        screenshots(page, "metrics-page", "light")
        light_labels = option(page, "m0", AXIS_LABEL_COLOUR)

        # two y axes, four series; the right axis's name sits below the toolbox's row
        assert option(page, "loss", "c.getOption().yAxis.length") == 2
        assert option(page, "loss", "c.getOption().grid[0].top") >= 56  # type: ignore[operator]
        assert option(page, "per-class", "c.getOption().series.map((s) => s.name)") == [
            "cat", "dog", "cow", "owl",
        ]  # fmt: skip

        # smoothing: on by the meta file (raw line faint behind), off, and the weight
        raw = [row["loss"] for row in points(METAS[0], 300)]
        names = option(page, "loss", "c.getOption().series.map((s) => s.name)")
        assert names == ["loss (raw)", "loss", "lr (raw)", "lr"]
        smoothed = option(page, "loss", "c.getOption().series[1].data.map((p) => p[1])")
        assert smoothed != raw and smoothed[0] == pytest.approx(raw[0])  # type: ignore[index]
        # the tooltip: six significant digits, the raw value next to the smoothed one
        option(page, "loss", "c.dispatchAction({type: 'showTip', seriesIndex: 1, dataIndex: 150})")
        tooltip = page.locator("[data-chart=loss] .plot > div").filter(has_text="raw").first
        expect(tooltip).to_contain_text("step 150")
        expect(tooltip).to_contain_text(
            f"loss {significant(smoothed[150])} raw {significant(raw[150])}"
        )  # type: ignore[index]
        option(page, "loss", "c.dispatchAction({type: 'hideTip'})")
        page.locator("[data-chart=loss] input.smooth").uncheck()
        assert option(page, "loss", "c.getOption().series.length") == 2
        assert option(
            page, "loss", "c.getOption().series[0].data.map((p) => p[1])"
        ) == pytest.approx(raw)
        page.locator("[data-chart=loss] input.smooth").check()
        page.locator("[data-chart=loss] input.weight").fill("0.9")
        heavier = option(page, "loss", "c.getOption().series[1].data.map((p) => p[1])")
        assert heavier != smoothed

        # the wheel zooms x, and y spans only the data in view: the tail of a falling loss
        plot = page.locator("[data-chart=m2] .plot")
        plot.scroll_into_view_if_needed()
        box = plot.bounding_box()
        assert box is not None
        (full_x, full_y) = extents_once(page, "m2", "true")
        assert full_y[1] >= 1
        page.mouse.move(box["x"] + box["width"] - 30, box["y"] + box["height"] / 2)
        page.mouse.wheel(0, -1500)
        zoomed_x, zoomed_y = extents_once(page, "m2", "x[0] > 10 && y[1] < 0.1")
        assert zoomed_x[1] <= full_x[1] and zoomed_y[1] >= decay[299]
        page.locator("[data-chart=m2] button", has_text="Reset zoom").click()
        assert extents_once(page, "m2", f"x[0] === {full_x[0]!r} && x[1] === {full_x[1]!r}") == (
            full_x,
            full_y,
        )
        # a box (the toolbox's zoom, then a drag) zooms x and y
        icon = option(page, "m2", TOOLBOX_ICON.format(title="Zoom to a box (x and y)"))
        page.mouse.click(box["x"] + icon["x"], box["y"] + icon["y"])  # type: ignore[index]
        page.mouse.move(box["x"] + 200, box["y"] + 120)
        page.mouse.down()
        page.mouse.move(box["x"] + 400, box["y"] + 220, steps=5)
        page.mouse.up()
        boxed_x, boxed_y = extents_once(page, "m2", f"y[1] < {full_y[1]!r} && x[1] < {full_x[1]!r}")
        assert full_x[0] < boxed_x[0] and full_y[0] <= boxed_y[0]
        page.locator("[data-chart=m2] button", has_text="Reset zoom").click()
        extents_once(page, "m2", f"x[1] === {full_x[1]!r} && y[1] === {full_y[1]!r}")

        # a log scale for y, refused for a line with values <= 0
        page.locator("[data-chart=m2] input.log-y").check()
        assert option(page, "m2", "c.getOption().yAxis[0].type") == "log"
        page.locator("[data-chart=m0] input.log-y").click()  # refused: stays unchecked
        expect(page.locator("[data-chart=m0] .refusal")).to_contain_text(
            "A log scale needs values above 0: value has"
        )
        expect(page.locator("[data-chart=m0] input.log-y")).not_to_be_checked()
        assert option(page, "m0", "c.getOption().yAxis[0].type") == "value"
        page.locator("[data-chart=loss] select.x-axis").select_option("time")
        assert option(page, "loss", "c.getOption().xAxis[0].type") == "time"

        # downloads: a PNG with the chart's title above it and without the controls, the CSV
        with page.expect_download() as png:
            page.locator("[data-chart=m1] button", has_text="PNG").click()
        image = Path(png.value.path()).read_bytes()
        assert image[:8] == b"\x89PNG\r\n\x1a\n"
        stats = page.evaluate(PNG_STATS, base64.b64encode(image).decode())
        plot_height = plot.bounding_box()["height"]  # type: ignore[index]
        assert stats["height"] == 2 * plot_height + 104  # the title band of 52 px, at 2x
        assert stats["title"] > 2 and stats["slider"] == 1 and stats["toolbox"] == 1, stats
        with page.expect_download() as table:
            page.locator("[data-chart=per-class] a", has_text="CSV").click()
        rows = list(csv.reader(io.StringIO(Path(table.value.path()).read_text())))
        expected = points(METAS[1], 300)
        assert rows[0] == ["epoch", "cat", "dog", "cow", "owl"] and len(rows) == 301
        assert [float(value) for value in rows[150]] == pytest.approx(
            [expected[149][key] for key in ("epoch", "cat", "dog", "cow", "owl")], rel=1e-15
        )

        # the charts follow a change of theme at once: dark axis labels become light
        page.emulate_media(color_scheme="dark")
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        page.wait_for_function(
            chart_function("m0", f"{AXIS_LABEL_COLOUR} !== {json.dumps(light_labels)}")
        )
        assert luminance(option(page, "m0", AXIS_LABEL_COLOUR)) > 0.5 > luminance(light_labels)
        context.close()

        # opened in the dark: dark charts at both widths
        context = browser.new_context(viewport={"width": 1600, "height": 1000}, color_scheme="dark")
        context.add_cookies([{"name": "_token", "value": token("alice"), "url": base}])
        page = context.new_page()
        page.goto(url)
        expect(page.locator(".chart-card .skipped")).to_contain_text(["points"] * 5)
        assert luminance(option(page, "m0", AXIS_LABEL_COLOUR)) > 0.5
        assert luminance(page.evaluate("cssColour('--bg')")) < 0.3
        screenshots(page, "metrics-page", "dark")
        context.close()


@pytest.mark.parametrize("api", ["sqlite"], indirect=True)
def test_the_resources_page_in_a_browser(api: Api, browser: Browser) -> None:
    task_id, _ = make_run(api, "browser-resources")
    short_task = make_short_run(api)
    with serving(create_app()) as base:
        for theme in ("light", "dark"):
            context = browser.new_context(
                viewport={"width": 1600, "height": 1000}, color_scheme=theme
            )
            context.add_cookies([{"name": "_token", "value": token("alice"), "url": base}])
            page = context.new_page()
            page.goto(f"{base}/ui/dags/{dag_id_for(task_id)}/runs/{quote(RUN_ID)}/resources")
            expect(page.locator(".chart-card canvas")).to_have_count(1)
            expect(page.locator(".chart-card .samples")).to_have_text("60 samples")
            screenshots(page, "resources-page", theme)
            context.close()

        context = browser.new_context(viewport={"width": 1100, "height": 800})
        context.add_cookies([{"name": "_token", "value": token("alice"), "url": base}])
        page = context.new_page()
        page.goto(f"{base}/ui/dags/{dag_id_for(task_id)}/runs/{quote(RUN_ID)}/resources")
        expect(page.locator(".chart-card canvas")).to_have_count(1)
        names = option(page, "resources", "c.getOption().series.map((s) => s.name)")
        assert sorted(names) == sorted(["CPU %", "Memory %", "Memory MiB", "GPU 0 utilisation %",
                                        "GPU 0 memory %", "GPU 1 utilisation %",
                                        "GPU 1 memory %"])  # fmt: skip
        # memory on its own axis, in MiB, beside the percentages
        axes = option(page, "resources", "c.getOption().series.map((s) => [s.name, s.yAxisIndex])")
        assert {name for name, axis in axes if axis == 1} == {"Memory MiB"}
        # the x axis spans the samples' two minutes, no more
        assert x_extent(page, "resources") == [1_764_000_000_000, 1_764_000_118_000]
        selected = "c.getOption().legend[0].selected"
        # CPU and memory when the page opens
        shown_first = {name for name, on in option(page, "resources", selected).items() if on}
        assert shown_first == {"CPU %", "Memory %", "Memory MiB"}
        toggle = "c.dispatchAction({type: 'legendToggleSelect', name: 'GPU 1 utilisation %'})"
        option(page, "resources", toggle)  # what a click on the legend entry does
        shown = option(page, "resources", selected)
        assert [name for name, on in shown.items() if on] == ["GPU 1 utilisation %"]
        page.wait_for_timeout(600)  # a pause longer than a double click's 400 ms: time passing
        option(page, "resources", f"({toggle}, {toggle})")  # a double click: every line
        assert all(option(page, "resources", selected).values())
        expect(page.locator("#node-choice")).to_be_visible()
        expect(page.locator("#node-choice")).to_contain_text("node (2 in this run)")
        # a node of a spec with GPUs whose image lacks pynvml is told so
        page.select_option("#node", "distributed-1")
        expect(page.locator("#notices")).to_contain_text(
            "The image of node distributed-1 lacks pynvml"
        )
        expect(page.locator(".chart-card canvas")).to_have_count(1)

        # a finished run of a second on a spec without GPUs: its one sample drawn with a
        # marker on an axis of seconds, nothing about GPUs or pynvml
        short = f"{base}/ui/dags/{dag_id_for(short_task)}/runs/{quote(RUN_ID)}/resources"
        page.goto(short)
        expect(page.locator(".chart-card .samples")).to_have_text("1 sample")
        # CPU %, memory % and memory MiB, each with a marker
        assert option(page, "resources", "c.getOption().series.map((s) => s.showSymbol)") == [
            True, True, True,
        ]  # fmt: skip
        first, last = x_extent(page, "resources")
        assert first < SHORT_RUN_SAMPLE * 1000 < last and last - first <= 10_000
        expect(page.locator("#notices")).to_be_empty()
        assert "GPU" not in page.locator("main").inner_text()
        page.wait_for_function(ANIMATIONS_ENDED)
        page.screenshot(path=screenshot_path("resources-short-run-1100"), full_page=True)
        # its other node recorded nothing, and the run is over: no "yet"
        page.select_option("#node", "distributed-1")
        expect(page.locator("#notices")).to_have_text(
            "Node distributed-1 of this run recorded no resource samples."
        )
        expect(page.locator(".chart-card")).to_have_count(0)
        context.close()
