"""Headless Debian chromium through Playwright (never a browser Playwright downloads), and the
plugin app served on 127.0.0.1 by uvicorn for the browser to load, stopped by the test."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from playwright.sync_api import Browser, expect, sync_playwright

from hooks.local.local_process import free_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
# How long an ``expect`` waits for the page (Playwright's default is 5 s): pages fetch from the
# plugin and draw with ECharts, which a loaded CI machine may take seconds to do, and an
# ``expect`` returns as soon as it holds.
EXPECT_MS = 30_000


@contextmanager
def chromium() -> Iterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        raise RuntimeError(
            f"the browser tests need Debian's chromium at {CHROMIUM} (apt install chromium)"
        )
    expect.set_options(timeout=EXPECT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """``app`` on a free port of 127.0.0.1 until the block ends; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def screenshot_path(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / f"{name}.png"
