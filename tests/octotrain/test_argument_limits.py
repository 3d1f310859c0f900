"""The limits on what reaches a training process through ``execve``: one text rule for string
parameters and variables (control characters, the platform's cap or the algorithm's own
``max_length``), its JSON schema saying the same, and the whole launch's size."""

from __future__ import annotations

import re

import jsonschema
import pytest

from octotrain.argument_limits import (
    LAUNCH_BUDGET_BYTES,
    MAX_TEXT_VALUE_LENGTH,
    launch_size_problem,
    text_value_problem,
    text_value_schema,
)
from octotrain.parameters import ParameterDeclaration, parameter_problem

TEXTS = ["", "plain", "中文 with spaces", "x" * MAX_TEXT_VALUE_LENGTH, "x" * 8193, "nul\x00",
         "tab\there", "line\nbreak", "trailing newline\n", "esc\x1b[0m", "del\x7f",
         "ok\u0085next"]  # fmt: skip


@pytest.mark.parametrize("text", TEXTS)
def test_the_schema_agrees_with_the_rule(text: str) -> None:
    schema = {"type": "string", **text_value_schema()}
    valid = jsonschema.Draft7Validator(schema).is_valid(text)
    assert valid is (text_value_problem(text) is None)


def test_an_algorithms_max_length_applies_below_the_cap_only() -> None:
    assert text_value_problem("abcde", 4) == "must be at most 4 characters, got 5"
    assert text_value_problem("abcd", 4) is None
    assert text_value_schema(4)["maxLength"] == 4
    assert text_value_schema(10**9)["maxLength"] == MAX_TEXT_VALUE_LENGTH
    declared = {"name": "tag", "type": "string", "max_length": 4}
    assert parameter_problem(declared, "abcde") == "must be at most 4 characters, got 5"


def test_a_declaration_keeps_max_length_and_choices_within_the_rules() -> None:
    assert ParameterDeclaration(name="tag", type="string", max_length=16).max_length == 16
    for wrong, rule in [
        ({"type": "int", "max_length": 3}, "max_length is only for string parameters"),
        ({"max_length": 0}, "greater than or equal to 1"),
        ({"max_length": MAX_TEXT_VALUE_LENGTH + 1}, "less than or equal to 8192"),
        ({"type": "enum", "choices": ["a", "b\x00"]}, "choices.1 must not contain control"),
        ({"max_length": 2, "default": "abc"}, "default must be at most 2 characters, got 3"),
    ]:
        with pytest.raises(ValueError, match=re.escape(rule)):
            ParameterDeclaration.model_validate({"name": "p", **wrong})


def test_a_refused_value_is_quoted_short() -> None:
    problem = parameter_problem({"name": "n", "type": "int"}, "9" * 10_000_000)
    assert problem is not None and len(problem) < 100


def test_the_launch_budget_names_the_biggest_item() -> None:
    small = launch_size_problem(["python", "train.py"], {"parameters.a": "--a=1"}, {"X": "1"})
    assert small is None
    big = "y" * (LAUNCH_BUDGET_BYTES // 2)
    problem = launch_size_problem(
        ["python", "train.py"],
        {"parameters.a": f"--a={big}", "parameters.b": f"--b={big[:-10]}"},
        {"X": "1"},
    )
    assert problem is not None and problem.field == "parameters.a"
    assert "more than the 1,024 KiB a training process may start with" in problem.rule
    assert problem.rule.endswith("the biggest item is parameters.a (512 KiB)")
    env_heavy = launch_size_problem(["run"], {}, {f"V{n}": "z" * 30_000 for n in range(40)})
    assert env_heavy is not None and env_heavy.field.startswith("env.V")
