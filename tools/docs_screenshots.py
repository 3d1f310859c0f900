"""The docs' pictures, taken from a running ``make run`` in Airflow's real UI, in the light and
the dark theme, with the browser of the tests (Debian's chromium through Playwright):

    make run PORT=8093                   # in another terminal, until its demo run has succeeded
    uv run python tools/docs_screenshots.py --url http://127.0.0.1:8093

Writes ``docs/images/<picture>-light.png`` and ``-dark.png``: the console's task list
(``console-tasks``), and the demo's last successful run in Airflow's grid with its Metrics tab
(``airflow-run-metrics``) and its Logs tab (``airflow-run-logs``). Signs in as the
embedded default's admin, whose password ``make run`` keeps in ``state/airflow/``. Taken by hand
when the pages change (a picture is not a test: the browser tests check the pages).
"""

from __future__ import annotations

import argparse
import json
from urllib.parse import quote

import httpx
from playwright.sync_api import Page, expect

from octotrain.settings import REPO_ROOT
from tests.browser import chromium

IMAGES = REPO_ROOT / "docs" / "images"
PASSWORDS = REPO_ROOT / "state" / "airflow" / "simple_auth_manager_passwords.json"
SIZE = {"width": 1440, "height": 860}
WAIT_MS = 60_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    url = parser.parse_args().url.rstrip("/")
    token = httpx.post(f"{url}/auth/token", json={
        "username": "admin", "password": json.loads(PASSWORDS.read_text())["admin"]},
        timeout=30).json()["access_token"]  # fmt: skip
    dag_id, run_id = last_successful_run(url, token)
    run_page = f"{url}/dags/{dag_id}/runs/{quote(run_id, safe='')}/plugin"
    with chromium() as browser:
        for scheme in ("light", "dark"):
            context = browser.new_context(viewport=SIZE, color_scheme=scheme)
            context.add_cookies([{"name": "_token", "value": token, "url": url}])
            page = context.new_page()
            shoot(page, f"{url}/plugin/octotrain-tasks", "Training", "a.task-name",
                  f"console-tasks-{scheme}")  # fmt: skip
            shoot(page, f"{run_page}/octotrain-metrics", "Metrics", "canvas",
                  f"airflow-run-metrics-{scheme}")  # fmt: skip
            shoot(page, f"{run_page}/octotrain-logs", "Logs", "#log-list a",
                  f"airflow-run-logs-{scheme}")  # fmt: skip
            context.close()


def last_successful_run(url: str, token: str) -> tuple[str, str]:
    """The DAG and run id of the training run that ended last with success."""
    answer = httpx.get(
        f"{url}/api/v2/dags/~/dagRuns",
        params={"state": "success", "order_by": "-end_date", "limit": 20},
        headers={"Authorization": f"Bearer {token}"}, timeout=30,
    )  # fmt: skip
    answer.raise_for_status()
    for run in answer.json()["dag_runs"]:
        if run["dag_id"].startswith("octotrain_task_"):
            return str(run["dag_id"]), str(run["dag_run_id"])
    raise SystemExit("no training run has succeeded yet: wait for make run's demo run")


def shoot(page: Page, address: str, view: str, drawn: str, name: str) -> None:
    """``address`` once Airflow shows the plugin's ``view`` with ``drawn`` in it."""
    page.goto(address)
    frame = page.frame_locator(f"iframe[title='{view}']")
    expect(frame.locator(drawn).first).to_be_visible(timeout=WAIT_MS)
    page.wait_for_load_state("networkidle")
    IMAGES.mkdir(exist_ok=True)
    page.screenshot(path=IMAGES / f"{name}.png")
    print(f"docs/images/{name}.png")


if __name__ == "__main__":
    main()
