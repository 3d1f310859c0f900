"""The configuration reference (docs/reference/configuration.md, as the docs' build renders it)
stays complete and true: a setting added to the code, the compose file or the Helm values
without a line there fails here, and so does a documented Airflow setting that Airflow does
not have. Its table of settings is generated from config/defaults.toml: a key without a comment
fails here."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

from airflow.configuration import conf

from octotrain.settings import DEFAULTS_FILE, ENV_PREFIX, REPO_ROOT

SETTING_VARIABLE = re.compile(r"\bOCTOTRAIN_[A-Z0-9_]*[A-Z0-9]\b")
AIRFLOW_OPTION = re.compile(r"\bAIRFLOW__([A-Z0-9_]+?)__([A-Z0-9_]+)\b")
# What the product is made of; tests and benchmarks set Airflow options for themselves only.
PRODUCT_FOLDERS = ("octotrain", "hooks", "operators", "dags", "plugins", "agent", "cli", "config")
PRODUCT_FILES = ("docker-compose.yaml", "Dockerfile", "Makefile", ".ci/run")
SOURCE_SUFFIXES = {".py", ".toml", ".yaml", ".yml", ".sql", ".js", ".html", ""}


def _reference() -> str:
    """The docs' configuration reference page as the site shows it (its generated parts made
    by the docs' build hook)."""
    page = (REPO_ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    return _docs_hook().on_page_markdown(page)


def _docs_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generated_reference", REPO_ROOT / "docs" / "hooks" / "generated_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(folders: tuple[str, ...], files: tuple[str, ...] = ()) -> list[Path]:
    found = [REPO_ROOT / name for name in files if (REPO_ROOT / name).is_file()]
    for folder in folders:
        found += [
            path
            for path in (REPO_ROOT / folder).rglob("*")
            if path.is_file()
            and path.suffix in SOURCE_SUFFIXES
            and "node_modules" not in path.parts
            and "__pycache__" not in path.parts
        ]
    return found


def _names(pattern: re.Pattern[str], paths: list[Path]) -> set[str]:
    return {
        match.group(0)
        for path in paths
        for match in pattern.finditer(path.read_text(encoding="utf-8", errors="replace"))
    }


def _table_rows(section: str) -> dict[str, str]:
    """First cell's backticked names → the row's second cell (the default), from the first
    row that names them (later tables may name a setting again in passing)."""
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 2:
            continue
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0]):
            rows.setdefault(name, cells[1])
    return rows


def test_every_default_setting_is_documented_with_its_default() -> None:
    rows = _table_rows(_reference())
    defaults = tomllib.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
    for key, value in defaults.items():
        name = ENV_PREFIX + key.upper()
        assert name in rows, f"{name} (config/defaults.toml) is missing from the reference"
        shown = "(empty)" if value == "" else f"`{value}`"
        assert shown in rows[name], f"{name}: the reference shows {rows[name]!r}, not {shown}"


def test_every_default_setting_has_a_meaning() -> None:
    rows = [line for line in _reference().splitlines() if line.startswith("| `OCTOTRAIN_")]
    empty = [
        row.split("|")[1].strip() for row in rows if not row.rstrip(" |").split("|")[-1].strip()
    ]
    assert empty == [], "config/defaults.toml: these keys have no comment above them"


def test_every_octotrain_variable_anywhere_is_documented() -> None:
    used = _names(
        SETTING_VARIABLE,
        _files((*PRODUCT_FOLDERS, "tests", "bench", "examples"), PRODUCT_FILES),
    )
    documented = set(SETTING_VARIABLE.findall(_reference()))
    assert sorted(used - documented) == []


def test_every_airflow_setting_the_product_sets_is_documented() -> None:
    set_by_product = {
        match.group(0)
        for path in _files(PRODUCT_FOLDERS, PRODUCT_FILES)
        for match in AIRFLOW_OPTION.finditer(path.read_text(encoding="utf-8", errors="replace"))
    }
    documented = {match.group(0) for match in AIRFLOW_OPTION.finditer(_reference())}
    assert sorted(set_by_product - documented) == []


def test_every_documented_airflow_setting_exists_in_airflow() -> None:
    documented = {match.groups() for match in AIRFLOW_OPTION.finditer(_reference())}
    assert documented, "the reference names no Airflow setting"
    # Airflow's own description of its options, providers' included (has_option would miss
    # the options whose default is None).
    described = conf.configuration_description
    unknown = [
        f"AIRFLOW__{section}__{key}"
        for section, key in sorted(documented)
        if key.lower() not in described.get(section.lower(), {}).get("options", {})
    ]
    assert unknown == []
