"""The console's catalog sections in headless chromium inside a real Airflow's UI (its
sandboxed iframe): a new user registers what a first task needs by clicking through the
section bar: an algorithm (a refused parameter range shown at its row, in view), a dataset, a
version uploaded with its progress and published, a data cache, a model repository; then a
model version trained by a run, with its lineage both ways, the links from it into Airflow and
back, and the DAG's docs linking to the task's page. Every section in both themes at 1100 and
1600 px; screenshots go to test-artifacts/."""

from __future__ import annotations

import io
import re
import uuid
import zipfile
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import FrameLocator, Page, Request, Route, expect

from octotrain.contracts import dag_id_for
from tests.browser import chromium, screenshot_path
from tests.factories import VALID_TASK
from tests.live_airflow import HTTP_SECONDS, LiveAirflow
from tests.plugins.ui.inside_airflow import signed_in

SECTIONS = {"algorithms": "Algorithms", "datasets": "Datasets", "caches": "Caches",
            "models": "Model repositories"}  # fmt: skip
# Airflow's address bar while the console shows a task's page
CONSOLE_TASK_URL = r"/plugin/octotrain-tasks/octotrain/ui/tasks/\d+$"


def _api(airflow: LiveAirflow, method: str, path: str, **options: Any) -> httpx.Response:
    url = f"{airflow.url}/octotrain/api/v1{path}"
    headers = airflow.admin_headers()
    return httpx.request(method, url, headers=headers, timeout=HTTP_SECONDS, **options)


def _demo_run(airflow: LiveAirflow) -> tuple[int, str]:
    """A run of the demo task started now (retried while Airflow parses its DAG): its task id
    and Airflow run id; it trains a version of house-price-model from house-prices v1."""
    task = next(item for item in _api(airflow, "GET", "/tasks").json()["tasks"]
                if item["project"] == "demo"
                and item["algorithm"] == "linear-regression-numpy")  # fmt: skip
    request = {"request_id": str(uuid.uuid4()), "conf": {}}
    started = airflow.wait_until(
        "the demo task's run to start",
        lambda: (
            (answer := _api(airflow, "POST", f"/tasks/{task['id']}/runs", json=request)).status_code
            == 201
            and answer.json()
        ),
    )
    return task["id"], started["dag_run_id"]


def _console(page: Page) -> FrameLocator:
    """The console's iframe in Airflow's UI, by what it shows (its title is the nav label)."""
    return page.frame_locator("iframe[src*='/octotrain/ui/']")


def _section(page: Page, console: FrameLocator, section: str) -> None:
    console.locator(".console-nav").get_by_role("link", name=SECTIONS[section]).click()
    expect(console.locator(f"#{section}-page")).to_be_visible()
    expect(page).to_have_url(re.compile(f"/plugin/octotrain-tasks/octotrain/ui/{section}$"))


def _zipped(name: str, members: dict[str, bytes]) -> dict[str, Any]:
    """A zip file as Playwright's file chooser takes one."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, content in members.items():
            archive.writestr(path, content)
    return {"name": name, "mimeType": "application/zip", "buffer": buffer.getvalue()}


def test_register_what_a_first_task_needs_and_follow_lineage(
    airflow: LiveAirflow, tmp_path: Path
) -> None:
    code_folder = tmp_path / "my-algo"
    (code_folder / "lib").mkdir(parents=True)
    (code_folder / "train.py").write_text("print('v2')\n")
    (code_folder / "lib" / "util.py").write_text("X = 1\n")
    (code_folder / "__pycache__").mkdir()  # left out by the page
    (code_folder / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"\0")
    task_id, run_id = _demo_run(airflow)  # trains while the user registers things
    with chromium() as browser:
        page = signed_in(browser.new_context(viewport={"width": 1100, "height": 800}), airflow)
        page.goto(f"{airflow.url}/plugin/octotrain-tasks")
        console = _console(page)

        # An algorithm: a default outside its range is refused at its parameter's row, in view
        _section(page, console, "algorithms")
        console.locator("section[data-project=demo]").get_by_role(
            "link", name="New algorithm"
        ).click()
        form = console.locator("#algorithm-page[data-ready=true] #algorithm-form")
        form.get_by_label("Name", exact=True).fill("catalog-algo")
        form.get_by_label("Sample type").fill("table")
        form.get_by_label("Image", exact=True).fill("python:3.11-slim")
        form.get_by_label("Command").fill("python\n-c\nprint('trained')")
        console.get_by_role("button", name="Add parameter").click()
        row = form.locator("tr.parameter").first
        row.get_by_label("Parameter name").fill("epochs")
        row.get_by_label("Parameter type").select_option("int")
        expect(row.get_by_label("Choices")).to_be_disabled()  # only for enum parameters
        row.get_by_label("Default").fill("500")
        row.get_by_label("Minimum").fill("1")
        row.get_by_label("Maximum", exact=True).fill("100")
        form.get_by_role("button", name="Create").click()
        error = form.locator("[data-error-for='parameters.0']")
        expect(error).to_contain_text("default must be within [1, 100], got 500")
        expect(row).to_be_in_viewport()
        expect(console.locator("#form-problems")).to_be_in_viewport()
        page.screenshot(path=screenshot_path("catalog-algorithm-refused"))
        row.get_by_label("Default").fill("5")
        # Its code as a zip: one that leaves its folder is refused at the field, and the
        # algorithm is not made either
        code_files = form.get_by_label("or files, or one zip")
        code_files.set_input_files(_zipped("code.zip", {"../escape.py": b"x"}))
        expect(console.locator("#code-chosen")).to_contain_text("the zip code.zip")
        form.get_by_role("button", name="Create").click()
        expect(form.locator("[data-error-for=archive]")).to_contain_text(
            "../escape.py: leaves the folder"
        )
        expect(code_files).to_have_attribute("aria-invalid", "true")
        assert _api(airflow, "GET", "/projects/demo/algorithms/catalog-algo").status_code == 404
        page.screenshot(path=screenshot_path("catalog-algorithm-code-refused"))
        code_files.set_input_files(_zipped("code.zip", {"algo/train.py": b"print('v1')\n"}))
        form.get_by_role("button", name="Create").click()
        expect(console.locator("#page-said")).to_contain_text(
            "Algorithm catalog-algo created, with its code v1."
        )
        expect(console.locator("tr[data-algorithm=catalog-algo]")).to_contain_text("epochs: int")
        console.get_by_role("link", name="catalog-algo").click()
        expect(form.locator("tr.parameter").first.get_by_label("Default")).to_have_value("5")
        form.get_by_label("Description", exact=True).fill("prints that it trained")
        # A folder as its next version (a browser's folder picker)
        form.get_by_label("Upload new code: a folder").set_input_files(code_folder)
        form.get_by_role("button", name="Save").click()
        expect(console.locator("#page-said")).to_contain_text("with its code v2.")
        expect(console.locator("tr[data-algorithm=catalog-algo]")).to_contain_text(
            "prints that it trained"
        )
        console.get_by_role("link", name="catalog-algo").click()
        code_v2 = form.locator("#code-versions #code-v2")
        expect(code_v2).to_contain_text("2 files")
        code_v2.locator("summary").click()
        expect(code_v2.get_by_role("link", name="Download", exact=True)).to_have_count(2)
        page.screenshot(path=screenshot_path("catalog-algorithm-code-versions"))
        console.locator(".console-nav").get_by_role("link", name="Algorithms").click()

        # A dataset, a version uploaded with its progress, published
        _section(page, console, "datasets")
        console.locator("#datasets-page header").get_by_role(
            "button", name="New dataset in demo"
        ).click()
        dialog = console.locator("#dataset-dialog")
        dialog.get_by_label("Name").fill("catalog data!")
        dialog.get_by_label("Sample type").fill("table")
        dialog.get_by_role("button", name="Create").click()
        expect(dialog.locator("[data-error-for=name]")).to_contain_text("must be 1-64 characters")
        dialog.get_by_label("Name").fill("catalog-data")
        dialog.get_by_role("button", name="Create").click()
        dataset = console.locator("tbody[data-dataset=catalog-data]")
        expect(dataset).to_contain_text("No version yet")
        dataset.get_by_role("button", name="Upload a version").click()
        upload = console.locator("#upload-dialog")
        upload.get_by_label("Version").fill("v1")
        upload.get_by_label("Files").set_input_files(
            [{"name": "train.csv", "mimeType": "text/csv", "buffer": b"x,y\n" + b"1,2\n" * 500_000},
             {"name": "test.csv", "mimeType": "text/csv", "buffer": b"x,y\n3,4\n"}]
        )  # fmt: skip
        expect(upload.locator(".chosen-files")).to_have_text("2 files, 1.9 MiB")
        # What the progress text says, in order (the page's own record, read before it reloads)
        progress_text = upload.locator(".progress-text")
        progress_text.evaluate(
            "text => { window.progressShown = []; new MutationObserver(() =>"
            " window.progressShown.push(text.textContent)).observe(text, {childList: true}); }"
        )
        # The page reloads once the version is stored: that reload is held, so the dialog shows
        # how the upload ended
        held: list[Route] = []

        def hold(route: Route, _request: Request) -> None:
            held.append(route)

        reload = re.compile(r"/octotrain/ui/datasets$")
        page.context.route(reload, hold)
        with page.expect_request(reload):
            upload.get_by_role("button", name="Upload").click()
        expect(upload.locator("progress")).to_have_js_property("position", 1)
        expect(progress_text).to_have_text("Stored.")
        shown = progress_text.evaluate("() => window.progressShown")
        assert shown[0] == "Uploading…" and shown[-1] == "Stored.", shown
        assert "Sent; the server is storing the files…" in shown, shown
        page.screenshot(path=screenshot_path("catalog-upload-progress"))
        held[0].continue_()
        page.context.unroute(reload)
        version = dataset.locator("tr[data-version=v1]")
        expect(version).to_contain_text("imported awaiting release")
        expect(version).to_contain_text("1.9 MiB")
        version.get_by_role("button", name="Publish").click()
        publish = console.locator("#publish-dialog")
        expect(publish.get_by_role("heading")).to_have_text("Publish catalog-data v1?")
        publish.get_by_role("button", name="Publish").click()
        expect(version.locator(".badge[class*=status-]")).to_have_text("published")
        expect(version.get_by_role("button", name="Publish")).to_have_count(0)
        # its files, browsed one by one, each to download
        version.locator("details.version-files summary").click()
        files = version.locator("details.version-files tr")
        expect(files).to_have_count(2)
        expect(files.first).to_contain_text("test.csv")
        expect(files.first.get_by_role("link", name="Download")).to_be_visible()

        # A cache of it, and a model repository
        _section(page, console, "caches")
        console.locator("section[data-project=demo]").get_by_role(
            "button", name="New cache"
        ).click()
        cache = console.locator("#cache-dialog")
        cache.get_by_label("Name").fill("catalog-cache")
        cache.get_by_label("Dataset version").select_option(label="catalog-data v1")
        cache.get_by_role("button", name="Create").click()
        expect(console.locator("tr[data-cache=catalog-cache]")).to_contain_text("catalog-data v1")
        _section(page, console, "models")
        console.locator("section[data-project=demo]").get_by_role(
            "button", name="New model repository"
        ).click()
        repository = console.locator("#repository-dialog")
        repository.get_by_label("Name").fill("catalog-model")
        repository.get_by_role("button", name="Create").click()
        expect(console.locator("article[data-repository=catalog-model]")).to_contain_text(
            "No version yet"
        )

        # The version the demo run trained: its lineage both ways
        model = airflow.wait_until("the demo run's model version", lambda: next(
            (item for item in _api(airflow, "GET",
             "/projects/demo/model-repositories/house-price-model/versions").json()
             ["model_versions"] if item["lineage"].get("run_id") == run_id), None))  # fmt: skip
        user = _api(
            airflow,
            "POST",
            "/tasks",
            json=VALID_TASK
            | {
                "name": "catalog-incremental",
                "training_kind": "incremental",
                "input_models": [{"repository": "house-price-model", "version": model["version"]}],
            },
        )
        assert user.status_code == 201, user.text
        _section(page, console, "models")
        versions = console.locator("article[data-repository=house-price-model]")
        versions.get_by_role("link", name=f"v{model['version']}", exact=True).click()
        lineage = console.locator("#model-version-page")
        made_from = lineage.locator("section.made-from")
        expect(made_from).to_contain_text("house-prices v1")
        expect(made_from.locator("#model-code-version")).to_have_text("code v1")  # the demo's
        # The run that made it, named as runs are everywhere ("#23", linked to its page in the
        # console), and its DAG run in Airflow (its Airflow id in the link's title)
        expect(made_from.locator("#made-by-run a").first).to_have_text(re.compile(r"^#\d+$"))
        in_airflow = made_from.locator(f"a[title='{run_id}']")
        expect(in_airflow).to_have_text("in Airflow")
        # the final metrics of that run, and the version's files with their downloads
        expect(made_from.locator("#model-finals .final-metric").first).to_be_visible()
        expect(lineage.locator("#model-files tbody tr").first).to_contain_text("Download")
        expect(lineage.locator("section.used-by")).to_contain_text("catalog-incremental")
        page.screenshot(path=screenshot_path("catalog-model-lineage"), full_page=True)
        lineage.locator("section.used-by").get_by_role("link", name="catalog-incremental").click()
        expect(console.locator("#task-page")).to_be_visible()
        # Back once Airflow's address bar has followed the iframe (it does so on the iframe's
        # load event, replacing its history entry): before that, the entry Back leaves differs
        # from the one it returns to in the iframe only, and Playwright waits for the top page
        expect(page).to_have_url(re.compile(CONSOLE_TASK_URL))
        page.go_back()
        in_airflow.click()  # into Airflow, by its router
        expect(page).to_have_url(re.compile(f"/dags/{dag_id_for(task_id)}/runs/.+$"))
        page.go_back()

        # The DAG's docs link back to the task's page in the console (Airflow opens a docs
        # link in a new tab)
        made_from.get_by_role("link", name=re.compile(".")).first.click()  # the task
        expect(page).to_have_url(re.compile(CONSOLE_TASK_URL))
        console.locator("#task-page h1 a.dag-link").click()
        expect(page).to_have_url(re.compile(f"/dags/{dag_id_for(task_id)}$"))
        page.get_by_role("button", name="Dag Docs").click()
        with page.context.expect_page() as opened:
            page.get_by_role("link", name="its page in the Octotrain console").click()
        expect(opened.value).to_have_url(
            re.compile(f"/plugin/octotrain-tasks/octotrain/ui/tasks/{task_id}$")
        )
        docs_target = _console(opened.value)
        expect(docs_target.locator(f"#task-page[data-task='{task_id}']")).to_be_visible()
        # The deep URL opened on its own shows the page in Airflow's iframe, in Airflow's frame
        expect(opened.value.get_by_role("link", name="Training")).to_be_visible()
        opened.value.screenshot(path=screenshot_path("console-deep-link-from-dag-docs"))
        opened.value.close()
        page.go_back()
        expect(console.locator("#task-page")).to_be_visible()

        # Every section in both themes at both widths
        for scheme, width in (("light", 1100), ("light", 1600), ("dark", 1600), ("dark", 1100)):
            page.emulate_media(color_scheme=scheme)
            page.set_viewport_size({"width": width, "height": 900})
            for section in SECTIONS:
                _section(page, console, section)
                page.screenshot(path=screenshot_path(f"catalog-{section}-{scheme}-{width}"))


def test_delete_through_the_dialog_says_what_still_uses_an_object(airflow: LiveAirflow) -> None:
    """Delete is confirmed in a dialog of the page; an algorithm a task uses is refused there,
    naming the task; a model version goes from its own page, which then leads back to the
    repositories; an unused model repository goes. In the dark theme at 1100 px."""
    unused = _api(airflow, "POST", "/projects/demo/model-repositories",
                  json={"name": "delete-me", "description": "unused"})  # fmt: skip
    assert unused.status_code == 201, unused.text
    version = _api(airflow, "POST", "/projects/demo/model-repositories/delete-me/versions",
                   files={"files": ("model.txt", b"w = 1")})  # fmt: skip
    assert version.status_code == 201, version.text
    with chromium() as browser:
        page = signed_in(browser.new_context(viewport={"width": 1100, "height": 800}), airflow)
        page.emulate_media(color_scheme="dark")
        page.goto(f"{airflow.url}/plugin/octotrain-tasks")
        console = _console(page)
        _section(page, console, "algorithms")
        used = console.locator("tr[data-algorithm=linear-regression-numpy]")
        used.get_by_role("button", name="Delete").click()
        dialog = console.locator("#delete-dialog")
        expect(dialog.get_by_role("heading")).to_have_text(
            "Delete algorithm linear-regression-numpy?"
        )
        dialog.get_by_role("button", name="Delete").click()
        refusal = dialog.locator(".dialog-problems")
        expect(refusal).to_contain_text("still referenced by task")
        expect(refusal).to_be_in_viewport()
        page.screenshot(path=screenshot_path("catalog-delete-refused-dark-1100"))
        dialog.get_by_role("button", name="Cancel").click()
        expect(dialog).to_be_hidden()
        expect(used).to_be_visible()

        _section(page, console, "models")
        page.emulate_media(color_scheme="light")
        repository = console.locator("article[data-repository=delete-me]")
        repository.get_by_role("link", name="v1", exact=True).click()
        version_page = console.locator("#model-version-page")
        version_page.get_by_role("button", name="Delete delete-me v1").click()
        expect(dialog.get_by_role("heading")).to_have_text("Delete delete-me v1?")
        dialog.get_by_role("button", name="Delete").click()
        expect(console.locator("#models-page")).to_be_visible()  # back to the repositories
        expect(repository).to_be_visible()
        expect(repository.get_by_role("link", name="v1", exact=True)).to_have_count(0)
        repository.get_by_role("button", name="Delete").click()
        expect(dialog.get_by_role("heading")).to_have_text("Delete model repository delete-me?")
        page.screenshot(path=screenshot_path("catalog-delete-confirm-light-1100"))
        dialog.get_by_role("button", name="Delete").click()
        expect(repository).to_have_count(0)
        assert (
            _api(airflow, "GET", "/projects/demo/model-repositories/delete-me").status_code == 404
        )


def test_an_algorithms_charts_from_its_train_log_are_edited_in_its_form(
    airflow: LiveAirflow,
) -> None:
    """A chart's regex that does not compile, then one that could backtrack without end, is
    refused at its row, in view; a good one is saved with the algorithm and shown again."""
    document = {"name": "charted-algo", "image": "python:3.11-slim", "sample_type": "table",
                "command": ["python", "-c", "print('loss=0.5')"]}  # fmt: skip
    made = _api(airflow, "POST", "/projects/demo/algorithms", json=document)
    assert made.status_code == 201, made.text
    for scheme, width in (("dark", 1100), ("light", 1600)):
        with chromium() as browser:
            context = browser.new_context(viewport={"width": width, "height": 800})
            page = signed_in(context, airflow)
            page.emulate_media(color_scheme=scheme)
            page.goto(f"{airflow.url}/plugin/octotrain-tasks")
            console = _console(page)
            _section(page, console, "algorithms")
            console.get_by_role("link", name="charted-algo").click()
            form = console.locator("#algorithm-page[data-ready=true] #algorithm-form")
            if scheme == "dark":
                form.get_by_role("button", name="Add chart").click()
            row = form.locator("tr.metric").first
            error = form.locator("[data-error-for='metric_definitions.0']")
            row.get_by_label("Chart name").fill("loss")
            for regex, rule in ((r"loss=(\d+", "does not compile: missing )"),
                                (r"(a+)+loss=(\d+)", "repeats a repeat")):  # fmt: skip
                row.get_by_label("Regex").fill(regex)
                form.get_by_role("button", name="Save").click()
                expect(error).to_contain_text(f"regex: {rule}")
                expect(row.get_by_label("Regex")).to_be_focused()
                expect(error).to_be_in_viewport()
                expect(row).to_be_in_viewport()
            page.screenshot(
                path=screenshot_path(f"catalog-algorithm-charts-refused-{scheme}-{width}")
            )
            row.get_by_label("Regex").fill("loss=([0-9.e-]+)")
            row.get_by_label("Total").fill("-2")
            form.get_by_role("button", name="Save").click()
            expect(error).to_contain_text("total: -2 must be a number above 0")
            expect(row.get_by_label("Total")).to_be_focused()
            row.get_by_label("Total").fill("1000")
            form.get_by_role("button", name="Save").click()
            expect(console.locator("tr[data-algorithm=charted-algo]")).to_be_visible()
            saved = _api(airflow, "GET", "/projects/demo/algorithms/charted-algo").json()
            assert [
                (item["name"], item["regex"], item["total"]) for item in saved["metric_definitions"]
            ] == [("loss", "loss=([0-9.e-]+)", 1000)]
            console.get_by_role("link", name="charted-algo").click()
            expect(form.locator("tr.metric").first.get_by_label("Regex")).to_have_value(
                "loss=([0-9.e-]+)"
            )
            expect(form.locator("tr.metric").first.get_by_label("Total")).to_have_value("1000")
            form.locator("#metric-definitions").scroll_into_view_if_needed()
            page.screenshot(path=screenshot_path(f"catalog-algorithm-charts-{scheme}-{width}"))


# Each word of each command shown (its text between white space, and after a path's "/": a
# <wbr>) drawn over more than one line.
WORDS_BROKEN = """() => [...document.querySelectorAll("code.command")].flatMap((code) => {
  const texts = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
  const broken = [];
  for (let text = texts.nextNode(); text; text = texts.nextNode()) {
    for (const word of text.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(text, word.index);
      range.setEnd(text, word.index + word[0].length);
      const lines = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
      if (lines.size > 1) broken.push(word[0]);
    }
  }
  return broken;
})"""

# A table header's background and text colour, and the page's.
HEADER_COLOURS = """() => { const th = document.querySelector("thead th");
  return [getComputedStyle(th).backgroundColor, getComputedStyle(th).color,
          getComputedStyle(document.body).color]; }"""


def test_tables_read_as_airflows_in_both_themes_and_commands_wrap_between_words(
    airflow: LiveAirflow,
) -> None:
    """A header row on the page's background in the text colour (as Airflow's tables), in both
    themes; at 1100 and 1600 px no word of a command is split over two lines, and the table
    fits the page (its last column, Delete, is not cut off)."""
    with chromium() as browser:
        page = signed_in(browser.new_context(viewport={"width": 1100, "height": 800}), airflow)
        page.goto(f"{airflow.url}/plugin/octotrain-tasks")
        console = _console(page)
        frame = page.frame_locator("iframe[src*='/octotrain/ui/']")
        for scheme, width in (("dark", 1100), ("dark", 1600), ("light", 1600), ("light", 1100)):
            page.emulate_media(color_scheme=scheme)
            page.set_viewport_size({"width": width, "height": 800})
            _section(page, console, "algorithms")
            expect(console.locator("html")).to_have_attribute("data-theme", scheme)
            table = frame.locator("section[data-project=demo] table")
            background, colour, text = table.evaluate(f"_ => ({HEADER_COLOURS})()")
            assert background == "rgba(0, 0, 0, 0)" and colour == text, (scheme, background)
            assert table.evaluate(f"_ => ({WORDS_BROKEN})()") == [], (scheme, width)
            expect(table.get_by_role("button", name="Delete").first).to_be_in_viewport(ratio=1)
            page.screenshot(path=screenshot_path(f"catalog-tables-{scheme}-{width}"))
