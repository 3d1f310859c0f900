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


def test_a_saved_task_is_read_typed_without_being_judged_again() -> None:
    """A rule made stricter since it was saved (here: no tab in a variable's value) must not
    make an old task unreadable where it is only shown or turned into a DAG."""
    from octotrain.task_spec import saved_task_spec

    saved = saved_task_spec(
        VALID
        | {
            "env": {"SEP": "a\tb"},
            "data_inputs": [{"dataset": "d", "version": "v1"}, {"cache": "c"}],
            "input_models": [{"repository": "m", "version": 2}],
        }
    )
    assert (saved.node_count, saved.priority, saved.run_as_uid) == (1, 0, 1000)  # defaults
    assert saved.env == {"SEP": "a\tb"} and saved.schedule is None and saved.retrain_on == []
    assert [ref.label for ref in saved.data_inputs] == ["d_v1", "c"]
    assert saved.input_models[0].label == "m_2"
