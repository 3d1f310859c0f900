"""docs/reference/dag-params.md: every Param the DAG factory makes for the example task is in
its table, the example covers every setting a run's conf may change, and the hook makes the
Params as the DAG factory makes them from a real catalog."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from reference_parts.dag_params import EXAMPLE_TASK, task_params

from dags.factory import build_all_dags
from dags.run_params import secret_schema
from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.contracts import dag_id_for
from octotrain.run_settings import RUN_SETTING_NAMES
from octotrain.secrets import MASK, SENSITIVE_WORDS
from tests.factories import seed

Page = Callable[[str], str]


def _rows(page: str) -> dict[str, list[str]]:
    """Each row of the Params' table by its Param → its cells."""
    rows = {}
    for line in page.splitlines():
        match = re.match(r"^\| `([^`]+)` \|(.*)\|$", line)
        if match:
            rows[match[1]] = [cell.strip() for cell in match[2].split(" | ")]
    return rows


def test_every_param_of_the_example_task_is_in_the_table(reference_page: Page) -> None:
    rows = _rows(reference_page("dag-params.md"))
    _, params = task_params(EXAMPLE_TASK)
    assert list(rows) == list(params)
    for name, param in params.items():
        kind, default, _rule, meaning, field = rows[name]
        assert default == f"`{json.dumps(param.value, ensure_ascii=False)}`", name
        assert meaning == " ".join((param.description or "").split()), name
        assert field.startswith(param.schema["title"]) and param.schema["section"] in field
        assert "null" in kind, f"{name}: null means 'as saved' and must be allowed"


def test_the_example_shows_every_setting_a_run_may_change() -> None:
    """A run setting the example task does not have would be missing from the page."""
    _, params = task_params(EXAMPLE_TASK)
    assert sorted(set(RUN_SETTING_NAMES) - set(params)) == []


def test_a_secret_s_param_is_described(reference_page: Page) -> None:
    page = reference_page("dag-params.md")
    assert all(f"`{word}`" in page for word in SENSITIVE_WORDS)
    assert f"default is `{MASK}`" in page
    assert secret_schema()["description"] in page


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_the_hook_makes_the_params_the_dag_factory_makes(
    catalog: CatalogHook,
    store: LocalFolderStore,
    octotrain_env: Path,
) -> None:
    """The hook makes its rows from the example documents, as the catalog makes them, without
    storing them: the Params must be those of the DAG of the same task in a real catalog."""
    demo = seed(catalog, store)
    built = build_all_dags(catalog.url)[dag_id_for(demo.task_id)].params
    _, made = task_params("examples/demo/task.yaml")
    assert list(made) == list(built)
    for name, param in made.items():
        real = built.get_param(name)
        assert (param.value, param.description, param.schema) == (
            real.value,
            real.description,
            real.schema,
        ), name
