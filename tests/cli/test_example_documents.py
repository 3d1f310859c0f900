"""The example documents in examples/ are valid against the demo catalog, as the docs say
(the incremental one once house-price-model has a version, the cache one once its cache
exists), and each is created by the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from octotrain.settings import REPO_ROOT
from tests.cli.conftest import Cli

pytestmark = pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
EXAMPLES = REPO_ROOT / "examples"


def test_every_example_task_is_created_from_its_file(cli: Cli, tmp_path: Path) -> None:
    weights = tmp_path / "model.npz"
    weights.write_bytes(b"\x00" * 8)
    cli.json("model-repository", "version", "import", "house-price-model", "--from", weights,
             "-p", "demo")  # fmt: skip
    cli.json(
        "cache", "create", "-f", EXAMPLES / "catalog" / "house-prices-cache.yaml", "-p", "demo"
    )
    cli.json("cache", "fill")
    documents = sorted((EXAMPLES / "tasks").iterdir())
    assert {path.suffix for path in documents} == {".yaml", ".json"}
    for path in documents:
        created = cli.json("task", "create", "-f", path)
        assert created["project"] == "demo", path
