"""MkDocs hook: the docs pages' generated parts, from the code itself, at every build.

A page holds a marker where a generated part goes; each is made by a module of
``reference_parts`` (beside this file), from the code that module's docstring names:

- ``<!-- generated: cli -->``: every ``octotrain`` command (``reference_parts.cli``);
- ``<!-- generated: rest-api -->``: every route and schema of the REST API (``rest_api``);
- ``<!-- generated: settings -->``: every key of ``config/defaults.toml`` (``settings``);
- ``<!-- generated: metrics-json -->``: every key of a ``metrics.json`` (``metrics``);
- ``<!-- generated: metric-definitions -->``: a metric definition's fields (``metrics``);
- ``<!-- generated: dag-params -->``: every Param of the example task's DAG (``dag_params``);
- ``<!-- generated: log-files -->``: every log file of a node (``run_files``);
- ``<!-- generated: run-objects -->``: every key of a run in the object store (``run_files``);
- ``<!-- generated: run-folder -->``: the state folder and a run's folder (``run_files``);
- ``<!-- generated: failure-classes -->``: every failure class (``failure_classes``);
- ``<!-- generated: import-contracts -->``: what each folder may import (``import_contracts``).

So a command, an option or a route added to the code is in the docs at the next build, and one
removed is gone: nothing here is copied by hand. A marker with no generator fails the build.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# MkDocs loads this file by its path (importlib's spec_from_file_location), not as a module of
# a package, and has its folder on sys.path only while it runs the file; the tests load it so
# too, without even that. The generators' package beside it is made importable here, for both.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference_parts.cli import cli_reference
from reference_parts.dag_params import dag_params_reference
from reference_parts.failure_classes import failure_classes_reference
from reference_parts.import_contracts import import_contracts_reference
from reference_parts.metrics import metric_definitions_reference, metrics_json_reference
from reference_parts.rest_api import rest_api_reference
from reference_parts.run_files import (
    log_files_reference,
    run_folder_reference,
    run_objects_reference,
)
from reference_parts.settings import settings_reference

MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Each marker of the page replaced by its generated part."""

    def generated(match: re.Match[str]) -> str:
        name = match[1]
        if name not in GENERATORS:
            raise ValueError(f"no generated part is called {name!r} (known: {sorted(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(generated, markdown)


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "rest-api": rest_api_reference,
    "settings": settings_reference,
    "metrics-json": metrics_json_reference,
    "metric-definitions": metric_definitions_reference,
    "dag-params": dag_params_reference,
    "log-files": log_files_reference,
    "run-objects": run_objects_reference,
    "run-folder": run_folder_reference,
    "failure-classes": failure_classes_reference,
    "import-contracts": import_contracts_reference,
}
