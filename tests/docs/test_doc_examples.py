"""Every shell and Python example of the tutorials and how-to guides runs, as a newcomer would
run it: a page whose example is wrong fails here, naming the page, the block's line and its
output, instead of failing the reader.

The convention the pages follow (docs/development/testing.md says it for their authors):

- every fenced code block names its language; a bare fence fails, naming page and line;
- ```bash and ```python blocks are run, in page order: the page's bash blocks in one
  ``bash -euo pipefail`` session (an ``export`` carries to the later blocks), each python block
  with the repository's interpreter from that session (its exports included), in the
  repository root; ``sh``, ``shell``, ``py`` … are refused, so that no shell example goes
  unrun under another name;
- a block whose fence follows ``<!-- not run: REASON -->`` on the line right before is not run
  (a deployment's ``kubectl``, ``make run`` itself); the reason must be given;
- other languages (``yaml``, ``toml``, ``json``, ``text``, ``console``, ``http`` …) are shown,
  never run;
- a page whose examples talk to a running Airflow (``octotrain task run``, ``stop``,
  ``resume``, a dataset version's publish that starts runs) says so with the line
  ``<!-- examples need: airflow -->``: it then runs with ``octotrain`` pointed at an Airflow
  (api-server, scheduler, dag-processor) that every such page shares in turn, over one state
  folder, as a reader's tutorials share one ``make run``. Every other page gets no Airflow, so
  that the few minutes this file may take go to the pages that need one.

A page without Airflow starts from a fresh state folder (``OCTOTRAIN_STATE_DIR``) with the
demo project seeded (``octotrain demo seed``, as ``make run`` seeds it), the pages with
Airflow from one such folder; ``.venv/bin`` is first on PATH, and ``mktemp`` makes its files
in the test's own temporary folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest

from hooks.local.local_process import free_port
from octotrain.settings import REPO_ROOT
from tests.live_airflow import LiveAirflow, live_airflow

DOCS = REPO_ROOT / "docs"
EXAMPLE_FOLDERS = ("tutorials", "how-to")
PAGES = sorted(page for folder in EXAMPLE_FOLDERS for page in (DOCS / folder).rglob("*.md"))
RUN_LANGUAGES = ("bash", "python")
# Other names of the languages that are run: refused, so that a shell or Python example is
# never shown unrun because it was spelled differently.
RUN_ALIASES = {"sh": "bash", "shell": "bash", "zsh": "bash", "ksh": "bash", "py": "python",
               "python3": "python", "py3": "python"}  # fmt: skip
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
NOT_RUN = re.compile(r"^\s*<!--\s*not run\b(?P<colon>:?)(?P<reason>.*?)-->\s*$")
NO_LANGUAGE = (
    "a code block without a language: name it (```bash or ```python are run; ```text, ```yaml "
    "… are shown)"
)
MISPLACED_MARKER = "`<!-- not run: … -->` must be on the line right before a code block's fence"
NEEDS_AIRFLOW = re.compile(r"^\s*<!--\s*examples need:\s*airflow\s*-->\s*$", re.MULTILINE)
VENV_BIN = REPO_ROOT / ".venv" / "bin" if (REPO_ROOT / ".venv" / "bin").is_dir() else None
# Generous for a loaded 2-core CI machine: the longest page (two runs of a 2-node training,
# one stopped and resumed) takes about two minutes there.
PAGE_SECONDS = 420
OUTPUT_SHOWN = 6000  # characters of a failing block's output in the failure's message
# How often the dag-processor parses the DAG files: a task created from the command line shows
# up in Airflow within seconds, as after ``make run`` (which parses every 10 s: cli.airflow_env;
# 5 s here, less of the test's minutes spent waiting).
PARSE_SETTINGS = {"AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "5"}


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    line: int  # of its opening fence, 1-based
    language: str
    text: str
    not_run: str | None  # the reason it is not run, when its fence follows the marker

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES and self.not_run is None


@dataclass(frozen=True)
class Page:
    """A page's code blocks, what breaks the convention, and whether it needs Airflow."""

    name: str  # its path in the repository
    blocks: list[Block]
    problems: list[str]
    needs_airflow: bool


def read_page(path: Path) -> Page:
    """The page's fenced blocks (at any indentation, as in a list item) and every breach of
    the convention, each naming the page's line."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(REPO_ROOT).as_posix() if path.is_relative_to(REPO_ROOT) else path.name
    lines = text.splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        marker = NOT_RUN.match(line)
        if marker is not None:
            reason = marker.group("reason").strip()
            if not marker.group("colon") or not reason:
                problems.append(f"{name}:{index + 1}: `<!-- not run: REASON -->` gives no reason")
            if index + 1 >= len(lines) or FENCE.match(lines[index + 1]) is None:
                problems.append(f"{name}:{index + 1}: {MISPLACED_MARKER}")
        opening = FENCE.match(line)
        if opening is None:
            index += 1
            continue
        fence, indent = opening.group("fence"), len(opening.group("indent"))
        language = (opening.group("info").split() or [""])[0].strip("{}.").lower()
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = next((i for i in range(index + 1, len(lines)) if closing.match(lines[i])), None)
        if end is None:
            problems.append(f"{name}:{index + 1}: a code block that is never closed")
            break
        previous = NOT_RUN.match(lines[index - 1]) if index > 0 else None
        reason = previous.group("reason").strip() if previous is not None else None
        body = "\n".join(_dedent(text_line, indent) for text_line in lines[index + 1 : end])
        if not language:
            problems.append(f"{name}:{index + 1}: {NO_LANGUAGE}")
        elif language in RUN_ALIASES:
            problems.append(
                f"{name}:{index + 1}: ```{language}: write ```{RUN_ALIASES[language]} to have it "
                "run (or mark it `<!-- not run: REASON -->`)"
            )
        blocks.append(Block(line=index + 1, language=language, text=body + "\n", not_run=reason))
        index = end + 1
    needs_airflow = NEEDS_AIRFLOW.search(text) is not None
    return Page(name=name, blocks=blocks, problems=problems, needs_airflow=needs_airflow)


def _dedent(line: str, indent: int) -> str:
    """A block's line without its fence's indentation (a block in a list item)."""
    stripped = len(line) - len(line.lstrip(" \t"))
    return line[min(indent, stripped) :]


@dataclass(frozen=True)
class PageRun:
    """What running a page's blocks did: the block that failed (None: all ran) and why."""

    failed: Block | None
    why: str
    output: str  # the failing block's (all of it when none failed)
    transcript: str  # every block's, with the lines that mark where each begins
    began: str = ""  # when the failing block began, in seconds into the page


def run_page(page: Page, env: dict[str, str], work: Path, timeout: float) -> PageRun:
    """Run the page's runnable blocks in order in one ``bash -euo pipefail`` session, python
    blocks from it with the repository's interpreter; tell which block failed, with its
    output (stdout and stderr as they came)."""
    runnable = [block for block in page.blocks if block.runs]
    token = f"@@doc-example-{uuid.uuid4().hex}"
    python = shlex.quote(str(VENV_BIN / "python" if VENV_BIN else Path(sys.executable)))
    script = []
    for number, block in enumerate(runnable):
        # Each block starts with the session's options (a block may have turned one off) and a
        # line that says, in the output, where its output begins, and when (bash's SECONDS).
        script.append(f"set -euo pipefail\nprintf '\\n%s %s\\n' '{token} {number}' \"$SECONDS\"")
        if block.language == "bash":
            script.append(block.text)
        else:
            source = work / f"block-{block.line}.py"
            source.write_text(block.text, encoding="utf-8")
            script.append(f"(cd {shlex.quote(str(REPO_ROOT))} && {python} - < "
                          f"{shlex.quote(str(source))})")  # fmt: skip
    script.append(f"printf '\\n%s %s\\n' '{token} end' \"$SECONDS\"")
    script_file = work / "page.sh"
    script_file.write_text("\n".join(script) + "\n", encoding="utf-8")
    process = subprocess.Popen(
        ["bash", "-euo", "pipefail", str(script_file)],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    timed_out = False
    try:
        output_bytes, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process.pid)
        output_bytes, _ = process.communicate()
    finally:
        _kill_group(process.pid)  # what a block left running in the background
    output = output_bytes.decode("utf-8", "replace")
    reached, per_block, began = _split_output(output, token)
    if reached == "end" and process.returncode == 0:
        return PageRun(failed=None, why="", output=output, transcript=output)
    failed = runnable[int(reached)] if reached not in (None, "end") else None
    if timed_out:
        why = f"did not finish within the page's {timeout:.0f} s"
    elif process.returncode == 0:
        why = "ended the page's bash session (an `exit`?) before the blocks after it ran"
    else:
        why = f"failed (exit status {process.returncode})"
    shown = per_block.get(reached or "", output)
    when = began.get(reached or "", "")
    return PageRun(failed=failed, why=why, output=shown, transcript=output, began=when)


def _split_output(output: str, token: str) -> tuple[str | None, dict[str, str], dict[str, str]]:
    """The last block whose start the output shows, each block's output, and when each
    began (seconds into the page)."""
    per_block: dict[str, str] = {}
    began: dict[str, str] = {}
    reached: str | None = None
    for piece in output.split(f"\n{token} ")[1:]:
        marker, _, rest = piece.partition("\n")
        reached, _, seconds = marker.strip().partition(" ")
        per_block[reached] = rest
        began[reached] = seconds
    return reached, per_block, began


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def failure_message(page: Page, run: PageRun) -> str:
    where = f"{page.name}:{run.failed.line}" if run.failed else page.name
    what = f"the {run.failed.language} block" if run.failed else "the page"
    if run.began:
        what += f" (begun {run.began} s into the page)"
    output = run.output[-OUTPUT_SHOWN:]
    cut = "…\n" if len(run.output) > OUTPUT_SHOWN else ""
    return f"{where}: {what} {run.why}; its output:\n{cut}{output}"


# ---- the environment of a page -------------------------------------------------------------


def base_environment(scratch: Path | None = None) -> dict[str, str]:
    """This process's environment without its Airflow and Octotrain settings (the tests' own,
    tests/conftest.py), ``.venv/bin`` first on PATH; temporary files (``mktemp``) in
    ``scratch``, which the test's temporary folder removes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "OCTOTRAIN_"))}
    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
        env["TMPDIR"] = str(scratch)
    bin_folder = VENV_BIN or Path(sys.executable).parent
    env["PATH"] = f"{bin_folder}{os.pathsep}{env.get('PATH', '')}"
    # The tests' cores for the local admission (tests/conftest.py): the pages' 2-node runs
    # start on a 2-core CI machine however loaded it is.
    env["OCTOTRAIN_LOCAL_CORES"] = os.environ.get("OCTOTRAIN_LOCAL_CORES", "64")
    return env


class PageEnvironment(NamedTuple):
    env: dict[str, str]
    airflow: LiveAirflow | None  # where the page needs one


@pytest.fixture(scope="session")
def seeded_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state folder with the catalog migrated and the demo project seeded, by the command a
    user runs; each page gets a copy."""
    state = tmp_path_factory.mktemp("docs-seeded") / "state"
    env = base_environment() | {"OCTOTRAIN_STATE_DIR": str(state)}
    seeded = subprocess.run(
        ["octotrain", "demo", "seed"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=PAGE_SECONDS,
    )
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    return state


def page_without_airflow(seeded: Path, root: Path) -> PageEnvironment:
    """A fresh copy of the seeded state; a command that would talk to Airflow finds a closed
    port, not whatever else listens on this machine."""
    state = root / "state"
    shutil.copytree(seeded, state)
    env = base_environment(root / "tmp") | {
        "OCTOTRAIN_STATE_DIR": str(state),
        "OCTOTRAIN_AIRFLOW_API_URL": f"http://127.0.0.1:{free_port()}",
        "AIRFLOW_HOME": str(root / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    return PageEnvironment(env, None)


@pytest.fixture(scope="module")
def pages_airflow(
    seeded_state: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PageEnvironment]:
    """One Airflow (api-server, scheduler, dag-processor: what ``make run`` starts, bar the
    triggerer, which no local run needs) over a copy of the seeded state, for every page that
    needs one, one after the other, as a reader goes from tutorial to tutorial on one
    ``make run``: such a page names what it creates as no other page does, and takes ids from
    the commands' output. Started by the first page that needs it (none: never), stopped with
    this module, so that it does not slow the rest of the suite down."""
    root = tmp_path_factory.mktemp("docs-airflow")
    state = root / "state"
    shutil.copytree(seeded_state, state)
    settings = PARSE_SETTINGS | {
        "OCTOTRAIN_STATE_DIR": str(state),
        "OCTOTRAIN_LOCAL_CORES": base_environment()["OCTOTRAIN_LOCAL_CORES"],
    }
    # The scheduler without its log server (which would listen on every interface): the task
    # logs are read from this machine's files.
    components = ("scheduler --skip-serve-logs", "dag-processor")
    with live_airflow(root, settings, components=components) as airflow:
        scratch = base_environment(root / "tmp")
        env = airflow.env | {
            "PATH": scratch["PATH"],
            "TMPDIR": scratch["TMPDIR"],
            "OCTOTRAIN_AIRFLOW_API_URL": airflow.url,
            "OCTOTRAIN_AIRFLOW_PASSWORD": airflow.password,
        }
        yield PageEnvironment(env, airflow)


# ---- the pages -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", PAGES, ids=[page.relative_to(REPO_ROOT).as_posix() for page in PAGES]
)
def test_the_pages_examples_run(
    path: Path, seeded_state: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    page = read_page(path)
    assert not page.problems, "\n".join(page.problems)
    if not any(block.runs for block in page.blocks):
        return
    if page.needs_airflow:
        env, airflow = request.getfixturevalue("pages_airflow")
    else:
        env, airflow = page_without_airflow(seeded_state, tmp_path)
    work = tmp_path / "blocks"
    work.mkdir()
    run = run_page(page, env, work, PAGE_SECONDS)
    if run.failed is not None or run.why:
        logs = f"\n\nAirflow's logs:\n{airflow.tail_of_logs()}" if airflow else ""
        pytest.fail(failure_message(page, run) + logs, pytrace=False)


def test_there_are_pages_to_run() -> None:
    """The glob found the folders (a moved docs/ would otherwise pass with nothing run)."""
    assert {page.parent.name for page in PAGES} >= set(EXAMPLE_FOLDERS)


# ---- the convention itself, on pages written here -------------------------------------------


def _page(tmp_path: Path, text: str) -> Page:
    path = tmp_path / "page.md"
    path.write_text(text, encoding="utf-8")
    return read_page(path)


def _run(tmp_path: Path, text: str) -> tuple[Page, PageRun]:
    page = _page(tmp_path, text)
    work = tmp_path / "work"
    work.mkdir()
    env = base_environment() | {"OCTOTRAIN_STATE_DIR": str(tmp_path / "state")}
    return page, run_page(page, env, work, timeout=60)


def test_a_bare_fence_is_refused_naming_its_line(tmp_path: Path) -> None:
    page = _page(tmp_path, "# A\n\n```bash\ntrue\n```\n\ntext\n\n```\nls\n```\n")
    assert page.problems == [f"page.md:9: {NO_LANGUAGE}"]


def test_a_not_run_marker_needs_a_reason_and_a_fence_right_after(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "<!-- not run: -->\n```bash\nkubectl get pods\n```\n\n"
        "<!-- not run: needs a cluster -->\n\n```bash\nkubectl get pods\n```\n\n"
        "- item\n\n    <!-- not run: needs a cluster -->\n"
        "    ```bash\n    kubectl apply\n    ```\n",
    )
    assert page.problems == [
        "page.md:1: `<!-- not run: REASON -->` gives no reason",
        f"page.md:6: {MISPLACED_MARKER}",
    ]
    assert [(block.line, block.not_run) for block in page.blocks] == [
        (2, ""), (8, None), (15, "needs a cluster")
    ]  # fmt: skip
    assert page.blocks[2].text == "kubectl apply\n"


def test_other_names_of_the_run_languages_are_refused(tmp_path: Path) -> None:
    page = _page(tmp_path, "```sh\nls\n```\n\n```yaml\na: 1\n```\n")
    assert page.problems == [
        "page.md:1: ```sh: write ```bash to have it run (or mark it `<!-- not run: REASON -->`)"
    ]
    assert [block.runs for block in page.blocks] == [False, False]


def test_blocks_run_in_order_sharing_the_sessions_exports(tmp_path: Path) -> None:
    page, run = _run(
        tmp_path,
        "```bash\nexport GREETING=hello\ncd /\n```\n\n"
        "```python\nimport os, pathlib\nprint(os.environ['GREETING'], pathlib.Path.cwd())\n```\n"
        "\n<!-- not run: shown only -->\n```bash\nfalse\n```\n\n```text\nnot run\n```\n\n"
        '```bash\necho "$GREETING again in $PWD"\n```\n',
    )
    assert run.failed is None and run.why == "", failure_message(page, run)
    assert f"hello {REPO_ROOT}\n" in run.output
    assert "hello again in /\n" in run.output


def test_a_failing_block_is_named_by_its_line_with_its_output(tmp_path: Path) -> None:
    page, run = _run(
        tmp_path,
        "```bash\necho first\n```\n\n```bash\necho second\nls /no/such/folder\necho never\n```\n"
        "\n```bash\necho third\n```\n",
    )
    assert run.failed is not None and run.failed.line == 5
    message = failure_message(page, run)
    said = r"page\.md:5: the bash block \(begun \d+ s into the page\) failed \(exit status 2\); "
    assert re.match(said + "its output:\n", message), message
    assert "second\n" in message and "/no/such/folder" in message
    assert "first" not in message and "never" not in message and "third" not in message


def test_a_failing_python_block_fails_the_page(tmp_path: Path) -> None:
    page, run = _run(tmp_path, "```python\nraise SystemExit('wrong')\n```\n\n```bash\ntrue\n```\n")
    assert run.failed is not None and run.failed.line == 1, failure_message(page, run)
    assert "wrong" in run.output


def test_a_block_that_exits_early_fails_the_page(tmp_path: Path) -> None:
    _page_run, run = _run(tmp_path, "```bash\nexit 0\n```\n\n```bash\necho after\n```\n")
    assert run.failed is not None and run.failed.line == 1
    assert "ended the page's bash session" in run.why
