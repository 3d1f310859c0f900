"""The docs' build hook (docs/hooks/generated_reference.py), loaded as MkDocs loads it: a file,
not a module of a package; and the reference pages as the site shows them, their generated
parts made by it. Both once per test session: the REST API's part builds the plugin's app."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from functools import cache
from types import ModuleType

import pytest

from octotrain.settings import REPO_ROOT

HOOKS_DIR = REPO_ROOT / "docs" / "hooks"
HOOK_FILE = HOOKS_DIR / "generated_reference.py"
REFERENCE = REPO_ROOT / "docs" / "reference"

# The generators' package beside the hook (reference_parts), importable by name as the hook
# makes it for itself: the tests here import its modules before any of them loads the hook.
sys.path.insert(0, str(HOOKS_DIR))


@pytest.fixture(scope="session")
def reference_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generated_reference", HOOK_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def reference_page(reference_hook: ModuleType) -> Callable[[str], str]:
    """A page of docs/reference/ by its file name, as the site's build renders its Markdown."""

    @cache
    def rendered(name: str) -> str:
        page = (REFERENCE / name).read_text(encoding="utf-8")
        return reference_hook.on_page_markdown(page)

    return rendered
