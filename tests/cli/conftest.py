"""The ``octotrain`` command run in-process (typer's runner) on a catalog of its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from tests.factories import seed


@dataclass
class Cli:
    runner: CliRunner
    root: Path

    def __call__(self, *args: str, input: str | None = None) -> Result:
        return self.runner.invoke(app, [str(arg) for arg in args], input=input)

    def json(self, *args: str) -> Any:
        result = self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(text, encoding="utf-8")
        return path


@pytest.fixture
def cli(octotrain_env: Path, catalog: CatalogHook, tmp_path: Path) -> Iterator[Cli]:
    seed(catalog, LocalFolderStore(octotrain_env / "objects"))
    yield Cli(runner=CliRunner(), root=tmp_path)
