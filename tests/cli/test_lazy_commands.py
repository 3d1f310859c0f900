"""The command's top level imports no command's code: ``octotrain --help`` must not pay for
SQLAlchemy, the catalog or Airflow's client (bench.cli measures the time)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cli.lazy_commands import LAZY_COMMANDS
from cli.main import app
from octotrain.settings import REPO_ROOT

PROBE = """
import sys
from typer.testing import CliRunner
from cli.main import app
result = CliRunner().invoke(app, ["--help"])
assert result.exit_code == 0, result.output
heavy = sorted(name for name in ("sqlalchemy", "pydantic", "httpx", "airflow", "yaml")
               if name in sys.modules)
print(",".join(heavy))
"""


def test_the_top_level_help_imports_no_command_s_code() -> None:
    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO_ROOT, capture_output=True,
                           text=True, check=True)  # fmt: skip
    assert probe.stdout.strip() == ""


@pytest.mark.parametrize("name", list(LAZY_COMMANDS))
def test_each_command_loads_with_the_help_the_top_level_shows(name: str) -> None:
    lazy = LAZY_COMMANDS[name]
    assert lazy.load().help is not None and lazy.load().help.startswith(lazy.help)
    shown = CliRunner().invoke(app, [name, "--help"])
    assert shown.exit_code == 0, shown.output
