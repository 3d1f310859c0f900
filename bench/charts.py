"""Benchmark: the Metrics page on a run whose six charts hold 1,000,000 points each.

- the downsampled chart API (``GET …/metrics/<chart>``, about 2,000 points a line, peaks kept):
  response time on the first request of a process without the chart's index (the file parsed,
  the index written), with it (what a run's collect stage leaves: columns read, not parsed),
  and then (only appended bytes parsed), and its size; goal ≤ 300 ms;
- indexing the six charts as the collect stage does (``index_node_charts``);
- the raw series of the same chart (``GET …/metrics/<chart>/csv``, every point): the baseline;
- the page with its six charts in headless Debian chromium, from navigation to six drawn
  charts: the first visit after collection (nothing read yet by the api-server; goal ≤ 2 s),
  again (goal ≤ 1.5 s), and one zoom redrawn. A page that shows a problem (a chart refused, an
  API error) stops the benchmark with the page's words, not a timeout.

The API is served by uvicorn on 127.0.0.1 with an Airflow token, as Airflow's api-server
serves it; "first request" and "first visit" forget what the server process has read before.

    uv run python -m bench.charts [--points 1000000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from bench.pods import median_seconds
from bench.task_create import _prepare_airflow, build_catalog, served_api

if TYPE_CHECKING:
    from octotrain.run_layout import RunLayout

CHARTS = [
    {"name": "loss", "x": "step", "ys": ["loss", "lr"], "description": "loss-and-lr",
     "smooth": "true", "with_timestamp": "true"},
    {"name": "per-class", "x": "step", "ys": ["f1"], "series": ["a", "b", "c", "d"],
     "description": "F1-by-class"},
    # descriptions are 1-64 of CJK, letters, digits, - and _ (no spaces: such a chart is refused)
    *({"name": f"metric-{n}", "x": "step", "ys": ["value"], "description": f"metric-{n}"}
      for n in range(4)),
]  # fmt: skip
RUN_ID = "manual__bench-charts"
# Debian's chromium, headless (never a browser Playwright downloads)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def write_points(path: Path, chart: dict, count: int) -> None:
    lines = chart.get("series") or chart["ys"]
    with path.open("w") as out:
        for start in range(0, count, 100_000):
            block = []
            for step in range(start, min(count, start + 100_000)):
                row = {"step": step, "timestamp": 1.7e9 + step}
                for number, line in enumerate(lines):
                    row[line] = round(math.sin(step / 5000 + number) + (step % 97) / 500, 6)
                block.append(json.dumps(row))
            out.write("\n".join(block) + "\n")


def setup(root: Path, points: int) -> tuple[int, int, RunLayout]:
    from hooks.storage.catalog import CatalogHook
    from octotrain.catalog.access import Scope
    from octotrain.catalog.models import Run, RunState
    from octotrain.metrics_meta import parse_meta
    from octotrain.planning import run_key
    from octotrain.run_layout import RunLayout
    from octotrain.tasks import Tasks

    url = os.environ["OCTOTRAIN_CATALOG_URL"]
    document = build_catalog(url, root)
    catalog = CatalogHook(url)
    with catalog.session() as session:
        task = Tasks(session, Scope.administrator("bench")).create(
            document | {"name": "charts", "node_count": 1}
        )
        run = Run(task_id=task.id, airflow_run_id=RUN_ID, state=RunState.SUCCESS, node_count=1,
                  plan={"run_key": run_key(RUN_ID), "node_indices": ["single-0"]})  # fmt: skip
        session.add(run)
        session.flush()
        ids = task.id, run.id
    catalog.dispose()
    layout = RunLayout(root / "state" / "runs", ids[0], run_key(RUN_ID))
    folder = layout.node_folders("single-0").metrics
    folder.mkdir(parents=True)
    meta = json.dumps({"id": str(ids[0]), "metas": CHARTS})
    problems = parse_meta(meta).problems
    if problems:
        raise SystemExit(f"the benchmark's metrics.json breaks the rules: {problems}")
    (folder / "metrics.json").write_text(meta)
    for chart in CHARTS:
        write_points(folder / f"{chart['name']}.jsonl", chart, points)
    return ids[0], ids[1], layout


# "drawn" once six charts have series; the text of the page's first problem notice if it shows one
DRAWN = """() => {
    const problem = document.querySelector('#notices .problem');
    if (problem) return problem.innerText;
    const plots = [...document.querySelectorAll('.chart-card .plot')];
    return plots.length === 6 && plots.every((p) => { const c = echarts.getInstanceByDom(p);
        return c && c.getOption() && c.getOption().series.length > 0; }) && 'drawn';
}"""
ZOOM = """() => new Promise((done) => {
    const c = echarts.getInstanceByDom(document.querySelector('[data-chart=loss] .plot'));
    c.on('finished', () => done());
    c.dispatchAction({type: 'dataZoom', start: 40, end: 60});
})"""


def page_seconds(base: str, token: str, task_id: int) -> tuple[float, float]:
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright

    from octotrain.contracts import dag_id_for

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_cookies([{"name": "_token", "value": token, "url": base}])
        page = context.new_page()
        started = time.perf_counter()
        page.goto(f"{base}/ui/dags/{dag_id_for(task_id)}/runs/{quote(RUN_ID)}/metrics")
        shown = page.wait_for_function(DRAWN, timeout=60_000).json_value()
        loaded = time.perf_counter() - started
        if shown != "drawn":
            raise SystemExit(f"the page shows a problem instead of six charts: {shown}")
        started = time.perf_counter()
        page.evaluate(ZOOM)
        zoom = time.perf_counter() - started
        browser.close()
    return loaded, zoom


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    points = parser.parse_args().points
    with tempfile.TemporaryDirectory(prefix="octotrain-bench-charts-") as scratch:
        root = Path(scratch)
        _prepare_airflow(root / "airflow")
        os.environ["OCTOTRAIN_STATE_DIR"] = str(root / "state")
        os.environ["OCTOTRAIN_CATALOG_URL"] = f"sqlite:///{root / 'catalog.db'}"
        os.environ["OCTOTRAIN_OBJECT_STORE_URL"] = f"file://{root / 'objects'}"
        from airflow.api_fastapi.app import create_auth_manager
        from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

        from hooks.local.local_process import free_port
        from hooks.runs.chart_series_index import index_node_charts
        from hooks.runs.run_files import FolderRunFiles
        from hooks.runs.run_metrics import forget_charts
        from hooks.storage.object_store import default_object_store

        task_id, run_id, layout = setup(root, points)
        token = create_auth_manager().generate_jwt(
            SimpleAuthManagerUser(username="bench", role="admin")
        )
        base_path = f"/api/v1/tasks/{task_id}/runs/{run_id}/metrics/loss"
        with (
            served_api(free_port()) as base,
            httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120
            ) as client,
        ):
            sizes: dict[str, int] = {}

            def get(path: str, label: str) -> None:
                answer = client.get(path)
                answer.raise_for_status()
                sizes[label] = len(answer.content)

            def first_request() -> None:
                forget_charts()
                get(base_path, "downsampled")

            unindexed = median_seconds(first_request, 1)  # parses (and writes a big one's index)
            warm = median_seconds(lambda: get(base_path, "downsampled"), 10)
            raw = median_seconds(lambda: get(f"{base_path}/csv", "raw"), 3)
            store = default_object_store()
            store.delete_prefix(f"{layout.objects.prefix}/chart-index")  # all six indexed afresh
            started = time.perf_counter()
            indexes = index_node_charts(store, FolderRunFiles(layout), "single-0")
            collect = time.perf_counter() - started
            indexed = median_seconds(first_request, 5)
            forget_charts()
            first, _ = page_seconds(base, token, task_id)
            again, zoom = page_seconds(base, token, task_id)
        raw_mb, down_mb = sizes["raw"] / 1e6, sizes["downsampled"] / 1e6
        api_goal = "goal ≤ 300 ms: "
        print(f"a chart of {points:,} points x 2 lines (page: 6 such charts)")
        row("raw series, CSV (baseline)", f"{raw * 1000:.1f} ms", 1, f"{raw_mb:.2f} MB")
        row("downsampled, first request:", "", None)
        row("  without an index", f"{unindexed * 1000:.1f} ms", unindexed / raw)
        row(
            "  with the index",
            f"{indexed * 1000:.1f} ms",
            indexed / raw,
            api_goal + verdict(indexed <= 0.3),
        )
        row(
            "downsampled, then",
            f"{warm * 1000:.1f} ms",
            warm / raw,
            f"{api_goal}{verdict(warm <= 0.3)}; {down_mb:.3f} MB, {raw_mb / down_mb:.0f}x smaller",
        )
        row(
            "collect: index the six charts",
            f"{collect:.3f} s",
            collect / raw,
            f"{len(indexes)} indexes",
        )
        row(
            "page, six charts, first visit",
            f"{first:.3f} s",
            first / raw,
            f"goal ≤ 2 s: {verdict(first <= 2)}",
        )
        row(
            "page, six charts, drawn again",
            f"{again:.3f} s",
            again / raw,
            f"goal ≤ 1.5 s: {verdict(again <= 1.5)}; a zoom redrawn in {zoom * 1000:.0f} ms",
        )


def row(label: str, figure: str, ratio: float | None, note: str = "") -> None:
    """One figure, its ratio to the baseline and what it is compared to."""
    shown = f"ratio {ratio:6.2f}x" if ratio is not None else ""
    print(f"  {label:<32}{figure:>11}  {shown:<14}  {note}".rstrip())


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


if __name__ == "__main__":
    main()
