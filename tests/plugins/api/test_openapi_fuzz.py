"""Schemathesis against the plugin's own OpenAPI document, with an admin's token, on SQLite
and PostgreSQL: whatever the generated requests, no answer is a 5xx and every answer matches
what the document says (status codes, content types, response schemas).

Each operation is its own test, run with Hypothesis directly (schemathesis' pytest plugin does
not support this pytest yet). The upload routes are also sent odd file names (schemathesis
names every file part after its field), on the catalog's real dataset and repository so that
the names are judged: long CJK names, 255- and 256-byte parts, deep paths, control characters,
``..``, empty parts, backslashes, percent-encoding.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from python_multipart.multipart import parse_options_header
from schemathesis.checks import positive_data_acceptance
from urllib3.fields import format_multipart_header_param

from octotrain.catalog.dataset_versions import dataset_version_prefix
from octotrain.run_layout import model_import_prefix
from plugins.app import create_app
from tests.file_names import name_of
from tests.plugins.api.conftest import Api, auth

# The document is served behind Airflow's login; the app makes the same one without a request.
APP = create_app()
SCHEMA = schemathesis.openapi.from_dict(APP.openapi())
SCHEMA.app = APP
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
# A deeper search: OCTOTRAIN_FUZZ_EXAMPLES=500 make test (CI keeps the default).
EXAMPLES_PER_OPERATION = int(os.environ.get("OCTOTRAIN_FUZZ_EXAMPLES", "25"))
# The upload routes, with the path parameters of objects that exist in the test catalog.
UPLOAD_TARGETS = {
    "POST /api/v1/projects/{project}/datasets/{dataset}/versions": {
        "project": "demo",
        "dataset": "house-prices",
    },
    "POST /api/v1/projects/{project}/model-repositories/{repository}/versions": {
        "project": "demo",
        "repository": "house-price-model",
    },
}
UPLOAD_OPERATIONS = [op for op in OPERATIONS if op.label in UPLOAD_TARGETS]
ODD_PARTS = st.sampled_from(
    ["", ".", "..", "数" * 75, name_of(224), name_of(255), name_of(256), "\\", "a\\b",
     "..\\x", "%2e%2e", "%2F", "a%2Fb", "%00", "%E6%95%B0", "%", "\x00", "\x01", "\t", "\n",
     "\r", "\x1b[0m", "\x7f", "\x85", "\u2028", "\ufeff", '"', "'", ";", "filename=x", " "]
)  # fmt: skip
PARTS = st.one_of(
    ODD_PARTS,
    st.integers(1, 300).map(name_of),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=90),
)
PATHS = st.one_of(
    st.lists(PARTS, min_size=1, max_size=6).map("/".join),
    st.lists(st.integers(1, 256).map(name_of), min_size=1, max_size=17).map("/".join),
)


@pytest.mark.parametrize("operation", OPERATIONS, ids=[op.label for op in OPERATIONS])
def test_no_request_is_answered_with_a_server_error(api: Api, operation: Any) -> None:
    headers = auth("alice")

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def generated(case: schemathesis.Case) -> None:
        # Schema-valid documents may still break catalog rules (a project that does not
        # exist): a 422 then is right, so positive-data acceptance is not demanded.
        case.call_and_validate(headers=headers, excluded_checks=[positive_data_acceptance])

    generated()


def as_received(name: str) -> str:
    """The file name the API reads for ``name``: the client percent-encodes CR, LF and '"' in
    the part's header (the HTML standard), the multipart parser unquotes it."""
    header = f'form-data; name="files"; {format_multipart_header_param("filename", name)}'
    _, options = parse_options_header(header.encode().decode("latin-1"))
    return options[b"filename"].decode()


def stored_prefix(target: dict[str, str], created: dict[str, Any]) -> str:
    if "dataset" in target:
        return dataset_version_prefix(target["project"], target["dataset"], created["version"])
    return model_import_prefix(target["project"], target["repository"], created["version"])


@pytest.mark.parametrize("operation", UPLOAD_OPERATIONS, ids=[op.label for op in UPLOAD_OPERATIONS])
def test_odd_file_names_are_never_a_server_error_and_a_refusal_leaves_no_file(
    api: Api, operation: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = auth("alice")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    numbers = itertools.count()  # a new dataset version each time, so the names are judged

    @given(
        case=operation.as_strategy(),
        names=st.lists(PATHS, min_size=1, max_size=4, unique=True),
    )
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def generated(case: schemathesis.Case, names: list[str]) -> None:
        case.path_parameters = UPLOAD_TARGETS[operation.label]
        form = {"version": f"fuzz-{next(numbers)}"} if "dataset" in case.path_parameters else {}
        files = [("files", (name, b"x", "application/octet-stream")) for name in names]
        response = case.call_and_validate(
            headers=headers, data=form, files=files, excluded_checks=[positive_data_acceptance]
        )
        assert response.status_code in (201, 400, 422), response.text
        assert list(scratch.iterdir()) == []
        if response.status_code == 201:
            prefix = stored_prefix(case.path_parameters, response.json())
            assert {info.key for info in api.store.list(prefix)} == {
                f"{prefix}/{as_received(name)}" for name in names
            }

    generated()
