"""Schemathesis against the plugin's own OpenAPI document, with an admin's token, on SQLite
and PostgreSQL: whatever the generated requests, no answer is a 5xx and every answer matches
what the document says (status codes, content types, response schemas).

Each operation is its own test, run with Hypothesis directly (schemathesis' pytest plugin does
not support this pytest yet).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import positive_data_acceptance

from plugins.api.app import create_app
from tests.plugins.api.conftest import Api, auth

SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", create_app())
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
# A deeper search: OCTOTRAIN_FUZZ_EXAMPLES=500 make test (CI keeps the default).
EXAMPLES_PER_OPERATION = int(os.environ.get("OCTOTRAIN_FUZZ_EXAMPLES", "25"))


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
