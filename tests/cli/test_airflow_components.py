"""``octotrain up`` stops within seconds, saying why, when Airflow cannot start: its port is
taken, or one of standalone's components cannot start or dies."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli import airflow_components
from cli.airflow_components import (
    ComponentFailed,
    ComponentWatch,
    check_port_free,
    with_own_bin_on_path,
)
from tests.cli.conftest import Cli

# A stand-in for ``airflow standalone``: starts a process per component (its name among its
# arguments, as ``airflow scheduler`` has), and stops the one named in argv[1] after a moment.
STANDALONE = """
import subprocess, sys, time
children = {name: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", name])
            for name in ("scheduler", "dag-processor", "api-server", "triggerer")}
if sys.argv[1] in children:
    time.sleep(0.5)
    children[sys.argv[1]].kill()
    children[sys.argv[1]].wait()
time.sleep(60)
"""


@pytest.fixture
def listening() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server.getsockname()[1]
    server.close()


def _standalone(tmp_path: Path, kill: str) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", STANDALONE, kill], start_new_session=True)
    yield process
    os.killpg(process.pid, 9)
    process.wait()


def _until_failed(watch: ComponentWatch, seconds: float = 30) -> ComponentFailed:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            watch.check()
        except ComponentFailed as failed:
            return failed
        time.sleep(0.1)
    raise AssertionError("the watch never noticed")


def test_a_taken_port_is_refused_before_anything_starts(listening: int) -> None:
    with pytest.raises(ComponentFailed, match=f"port {listening} on 127.0.0.1 is already in use"):
        check_port_free(listening)


def test_octotrain_up_on_a_taken_port_stops_at_once_saying_so(cli: Cli, listening: int) -> None:
    started = time.monotonic()
    result = cli("up", "--port", str(listening))
    assert result.exit_code == 2
    assert f"port {listening} on 127.0.0.1 is already in use" in result.stderr
    assert time.monotonic() - started < 60  # it waited up to 600 s


def test_the_components_are_found_on_the_path_of_this_interpreter() -> None:
    """Called as ``.venv/bin/octotrain up`` (the venv not activated), standalone found no
    ``airflow`` on PATH for its components."""
    env = with_own_bin_on_path({"PATH": "/usr/bin:/bin"})
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
    assert (Path(sys.executable).parent / "airflow").exists()


def test_a_component_that_dies_is_named_with_the_end_of_the_log(tmp_path: Path) -> None:
    log = tmp_path / "standalone.log"
    log.write_text("api-server  | OSError: [Errno 98] address already in use\n")
    for process in _standalone(tmp_path, kill="api-server"):
        failed = _until_failed(ComponentWatch(process.pid, log))
        assert str(failed).startswith("Airflow's api-server exited; the end of ")
        assert "address already in use" in str(failed)


def test_a_component_that_never_starts_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(airflow_components, "START_SECONDS", 1.0)
    lonely = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        failed = _until_failed(ComponentWatch(lonely.pid, tmp_path / "none.log"))
    finally:
        lonely.kill()
        lonely.wait()
    assert "did not start in 1 s" in str(failed) and "scheduler" in str(failed)


# A stand-in whose api-server renames itself once started, as Airflow's does (setproctitle:
# "airflow api_server -- host:..."), by replacing its program with one of another command line.
RENAMING = """
import subprocess, sys, time
after = [sys.executable, "-c", "import time; time.sleep(60)", "api_server"]
rename = f"import os, sys, time; time.sleep(0.3); os.execv(sys.executable, {after!r})"
children = [subprocess.Popen([sys.executable, "-c", rename if name == "api-server" else
                              "import time; time.sleep(60)", name])
            for name in ("scheduler", "dag-processor", "api-server", "triggerer")]
time.sleep(60)
"""


def test_a_component_that_renames_itself_is_still_watched(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", RENAMING], start_new_session=True)
    try:
        watch = ComponentWatch(process.pid, tmp_path / "standalone.log")
        deadline = time.monotonic() + 20
        while len(watch.seen) < 4 and time.monotonic() < deadline:
            watch.check()
            time.sleep(0.05)
        assert len(watch.seen) == 4
        renamed_by = time.monotonic() + 2
        while time.monotonic() < renamed_by:
            watch.check()  # the renamed api-server is the same process: not gone
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, 9)
        process.wait()
