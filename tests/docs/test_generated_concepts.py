"""The concepts pages' generated parts (docs/hooks/generated_reference.py) cover the code they
are made from: every log file ``NodeLogNames`` names, every key ``RunObjects`` spells, every
path of a run's folder ``RunLayout`` gives, every ``FailureClass``, every import contract of
``pyproject.toml``; and a member the docs would name without saying what it is fails the build.

The expected names are spelled here from the classes themselves, not through the hook's
helpers, so a generator that skips a member is caught."""

from __future__ import annotations

import dataclasses
import inspect
import tomllib
from pathlib import PurePosixPath
from types import ModuleType
from typing import Any

import pytest
from reference_parts.import_contracts import import_bans
from reference_parts.run_files import documented_members

from octotrain.contracts import LOG_KINDS, NodeFolders, NodeLogNames
from octotrain.failure_classes import FailureClass
from octotrain.run_layout import RunLayout, RunObjects
from octotrain.settings import REPO_ROOT


def _generated(hook: ModuleType, name: str) -> str:
    return hook.GENERATORS[name]()


def _row(text: str, needle: str) -> str:
    """The table row of ``text`` that holds ``needle``; a failure names what is missing."""
    rows = [line for line in text.splitlines() if needle in line]
    assert rows, f"no row holds {needle}"
    return rows[0]


def _public_members(cls: type) -> dict[str, Any]:
    """The class's own properties and methods (no constructors: ``from_prefix`` names no file)."""
    return {
        name: member
        for name, member in vars(cls).items()
        if not name.startswith("_")
        and not isinstance(member, classmethod | staticmethod)
        and (isinstance(member, property) or inspect.isfunction(member))
    }


def _first_words(member: Any) -> str:
    """The start of a member's docstring as the page shows it (rST's ``code`` as Markdown's)."""
    function = member.fget if isinstance(member, property) else member
    doc = inspect.getdoc(function)
    assert doc, f"{function.__qualname__} has no docstring"
    return " ".join(doc.split())[:40].replace("``", "`")


def test_every_log_file_of_a_node_is_listed_with_its_kind_and_what_it_holds(
    reference_hook: ModuleType,
) -> None:
    text = _generated(reference_hook, "log-files")
    names = NodeLogNames(task_id="<task id>", node_index="<node index>")  # type: ignore[arg-type]
    members = _public_members(NodeLogNames)
    files = {name: member for name, member in members.items() if isinstance(member, property)}
    assert set(files) == set(LOG_KINDS)
    for kind, file in names.by_kind().items():
        row = _row(text, f"| `{file}` |")
        assert row.startswith(f"| `{kind}` |")
        assert _first_words(files[kind]) in row
        assert ("by every node" in row) == (file in names.always())
    # the methods other than the names: each is what a column of the table is made from
    assert set(members) - set(files) == {"always", "by_kind"}
    sample = NodeLogNames(task_id=7, node_index="distributed-1")
    for file in sample.by_kind().values():
        assert f"`{file}`" in text


def test_every_key_of_a_run_in_the_object_store_is_listed(reference_hook: ModuleType) -> None:
    text = _generated(reference_hook, "run-objects")
    objects = RunObjects(task_id="<task id>", run_key="<run key>")  # type: ignore[arg-type]
    for name, member in _public_members(RunObjects).items():
        if isinstance(member, property):
            key = getattr(objects, name)
        else:
            placeholders = {"node_index": "<node index>", "name": "<file>", "attempt": "<n>",
                            "chart_name": "<chart name>"}  # fmt: skip
            parameters = list(inspect.signature(member).parameters)[1:]
            key = member(objects, *(placeholders[parameter] for parameter in parameters))
        row = _row(text, f"`RunObjects.{name}`")
        assert row.startswith(f"| `{key}` |")
        assert _first_words(member) in row
    for prefix in (
        "datasets/<project>/<dataset>/<version>/",
        "models/<project>/<repository>/runs/<task id>-<run key>/",
        "models/<project>/<repository>/<version>/",
    ):
        assert f"| `{prefix}` |" in text


def test_every_path_of_a_run_folder_and_of_the_state_folder_is_listed(
    reference_hook: ModuleType,
) -> None:
    text = _generated(reference_hook, "run-folder")
    layout = RunLayout(PurePosixPath("<runs_dir>"), "<task id>", "<run key>")  # type: ignore[arg-type]
    paths = {
        name: member
        for name, member in _public_members(RunLayout).items()
        if (member.fget if isinstance(member, property) else member).__annotations__.get("return")
        in ("Path", "NodeFolders")
    }
    assert "RunLayout.run_dir" in text and f"`{layout.run_dir}`" in text
    for name, member in paths.items():
        if name not in ("run_dir", "create_node_folders"):  # the folder itself; a maker
            assert f"`RunLayout.{name}`" in text
            assert name in ("node_folders", "path") or _first_words(member) in text
    folders = layout.node_folders("<node index>")
    for field in dataclasses.fields(NodeFolders):
        path = getattr(folders, field.name).relative_to(layout.run_dir).as_posix()
        assert f"| `{path}/` |" in text
        assert f"`{field.name.upper()}`" in text
    for folder in ("catalog.db", "objects", "runs", "node-cache", "airflow"):
        assert f"| `{folder}` |" in text


def test_every_failure_class_is_listed_with_its_causes_and_whether_it_is_retried(
    reference_hook: ModuleType,
) -> None:
    text = _generated(reference_hook, "failure-classes")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [str(failure) for failure in FailureClass]
    for failure, row in zip(FailureClass, rows, strict=True):
        assert failure.causes().split(",")[0] in row
        assert failure.in_words() in row
        assert ("| yes" in row) == failure.retried


def test_every_import_contract_is_shown_for_each_folder_it_binds(
    reference_hook: ModuleType,
) -> None:
    text = _generated(reference_hook, "import-contracts")
    linter = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]
    for root in linter["root_packages"]:
        assert f"| `{root}/` |" in text
    for contract in linter["contracts"]:
        assert contract["name"] in text
    octotrain_row = _row(text, "| `octotrain/` |")
    assert "`airflow`" in octotrain_row.split("|")[3]


def test_a_member_without_a_docstring_or_a_contract_of_an_unknown_kind_fails_the_build() -> None:
    @dataclasses.dataclass(frozen=True)
    class Undocumented:
        task_id: int

        @property
        def somewhere(self) -> str:
            return f"runs/{self.task_id}"

    with pytest.raises(ValueError, match=r"Undocumented.somewhere has no docstring"):
        list(documented_members(Undocumented, "str"))
    with pytest.raises(ValueError, match="import contracts of type 'independence'"):
        import_bans([{"type": "independence", "name": "x", "modules": []}])
