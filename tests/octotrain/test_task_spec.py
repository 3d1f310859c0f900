"""The task document's own rules, and its JSON schema (the OpenAPI document, forms) saying
the same as its validators."""

from __future__ import annotations

import re

import pytest

from octotrain.documents import parse_document
from octotrain.errors import InvalidInput
from octotrain.task_spec import DataRef, TaskSpec

SCHEMA = TaskSpec.model_json_schema()
VALID = {
    "project": "demo",
    "name": "n",
    "resource_spec": "s",
    "algorithm": "a",
    "model_repository": "m",
}


@pytest.mark.parametrize(
    "name", ["a", "A" * 64, "中文名称", "x_y-z9", "", "A" * 65, "has space", "café", "a/b"]
)
def test_the_schemas_name_pattern_agrees_with_the_rule(name: str) -> None:
    pattern = re.compile(SCHEMA["properties"]["name"]["pattern"])
    try:
        parse_document(TaskSpec, VALID | {"name": name})
        accepted = True
    except InvalidInput:
        accepted = False
    assert bool(pattern.fullmatch(name)) is accepted


@pytest.mark.parametrize("description", ["ok, fine (1)", "x" * 256, "a|b", "tab\there", "nul\x00"])
def test_the_schemas_description_pattern_agrees_with_the_rule(description: str) -> None:
    schema = SCHEMA["properties"]["description"]
    try:
        parse_document(TaskSpec, VALID | {"description": description})
        accepted = True
    except InvalidInput:
        accepted = False
    matches = bool(re.fullmatch(schema["pattern"], description))
    assert (matches and len(description) <= schema["maxLength"]) is accepted


def test_a_data_input_is_a_dataset_version_or_a_cache() -> None:
    assert DataRef(dataset="d", version="v1").label == "d_v1"
    assert DataRef(cache="c").label == "c"
    assert DataRef(cache="c").is_cache


def test_the_stored_document_leaves_out_absent_parts() -> None:
    spec = parse_document(TaskSpec, VALID | {"data_inputs": [{"cache": "c"}]})
    stored = spec.stored()
    assert stored["data_inputs"] == [{"cache": "c"}]
    assert parse_document(TaskSpec, stored) == spec
