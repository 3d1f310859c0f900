"""Metric definitions of an algorithm: refused with the reason when saved, and the charts the
wrapper is told to extract."""

import json
from typing import Any

import pytest

from octotrain.catalog.documents import AlgorithmDocument
from octotrain.documents import parse_document
from octotrain.errors import InvalidInput
from octotrain.metric_definitions import MetricDefinition, extraction_arguments
from octotrain.metrics_meta import parse_meta
from octotrain.regex_risk import backtracking_risk


def algorithm(*definitions: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "plain-script",
        "image": "python:3.11-slim",
        "command": ["python", "train.py"],
        "sample_type": "table",
        "metric_definitions": list(definitions),
    }


def problems(*definitions: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidInput) as refused:
        parse_document(AlgorithmDocument, algorithm(*definitions))
    return [str(problem) for problem in refused.value.problems]


LOSS = {"name": "loss", "regex": "loss=([0-9.e-]+)"}


@pytest.mark.parametrize(
    ("regex", "reason"),
    [
        ("loss=([0-9.", "does not compile: unterminated character set"),
        ("loss=(a+)+$", "repeats a repeat"),
        (r"(\w*\s?)*=([0-9.]+)", "repeats a repeat"),
        (r"loss=((?:\d{1,9})+)", "repeats a repeat"),
        ("loss=[0-9.]+", "has no capture group"),
        ("(" * 300 + ")" * 300, "at most 500 characters, got 600"),
        ("(" * 249 + "1" + ")" * 249, "nests its groups too deeply"),
        (r"(?P<step>\d+)", "its only group is the x axis 'step'"),
        (r"(?P<a>1)(?P<b>2)(?P<c>3)(?P<d>4)(?P<e>5)", "at most 4 series"),
        (r"(?P<café>[0-9.]+)", "'café' must be 1 to 16 of CJK"),
    ],
)
def test_a_bad_regex_is_refused_naming_its_definition(regex: str, reason: str) -> None:
    found = problems(LOSS, {"name": "other", "regex": regex})
    assert len(found) == 1
    assert found[0].startswith("metric_definitions.1.regex: ")
    assert reason in found[0]


def test_chart_rules_of_the_manual_apply_to_the_declared_charts() -> None:
    assert problems(LOSS, dict(LOSS, regex="l=([0-9.]+)")) == [
        "metric_definitions: chart names must be unique; repeated: loss"
    ]
    seven = [{"name": f"c{number}", "regex": "=([0-9.]+)"} for number in range(7)]
    assert problems(*seven) == ["metric_definitions: at most 6 charts, got 7"]
    assert problems({"name": "a very long chart name", "regex": "([0-9])"}) == [
        "metric_definitions.0.name: 'a very long chart name' must be 1 to 16 of CJK characters, "
        "letters, digits, - and _"
    ]
    assert problems({"name": "acc", "ys": ["a", "b", "c"], "regex": "([0-9])"})[0].startswith(
        "metric_definitions.0.ys: "
    )
    assert problems({"name": "acc", "ys": ["loss", "acc"], "regex": "(?P<loss>[0-9.]+)"}) == [
        "metric_definitions.0.regex: with two y axes, its named groups must be the axes loss "
        "and acc (and optionally x), got loss"
    ]
    assert problems({"name": "step", "regex": "step ([0-9]+)"}) == [
        "metric_definitions.0.regex: x 'step' is also a y axis: name them differently"
    ]
    assert problems({"name": "loss", "regex": "([0-9])", "description": "a/b"})[0].startswith(
        "metric_definitions.0.description: "
    )


@pytest.mark.parametrize(
    ("definition", "meta", "lines", "x_group"),
    [
        (
            LOSS,
            {"name": "loss", "x": "step", "ys": ["loss"]},
            [{"group": 1, "key": "loss"}],
            None,
        ),
        (
            {"name": "损失", "regex": r"(?:第(?P<轮>\d+)轮)?.*?(?:loss|损失)=([0-9.]+)", "x": "轮"},
            {"name": "损失", "x": "轮", "ys": ["损失"]},
            [{"group": 2, "key": "损失"}],
            "轮",
        ),
        (
            {"name": "acc", "ys": ["accuracy"], "regex": r"train=(?P<train>\S+) val=(?P<val>\S+)"},
            {"name": "acc", "x": "step", "ys": ["accuracy"], "series": ["train", "val"]},
            [{"group": "train", "key": "train"}, {"group": "val", "key": "val"}],
            None,
        ),
        (
            {"name": "fit", "ys": ["loss", "acc"], "regex": r"acc=(?P<acc>\S+) loss=(?P<loss>\S+)"},
            {"name": "fit", "x": "step", "ys": ["loss", "acc"]},
            [{"group": "loss", "key": "loss"}, {"group": "acc", "key": "acc"}],
            None,
        ),
    ],
)
def test_each_definition_becomes_a_chart_the_charts_page_accepts(
    definition: dict[str, Any], meta: dict[str, Any], lines: list[Any], x_group: str | None
) -> None:
    extraction = MetricDefinition.model_validate(definition).extraction()
    assert {key: extraction["meta"][key] for key in meta} == meta
    assert "series" in extraction["meta"] or "series" not in meta
    assert extraction["lines"] == lines
    assert extraction["x_group"] == x_group
    document = json.dumps({"id": "1", "metas": [extraction["meta"]]}, ensure_ascii=False)
    assert parse_meta(document).problems == []


def test_the_wrapper_is_told_the_extraction_only_when_there_is_one() -> None:
    extraction = [MetricDefinition.model_validate(LOSS).extraction()]
    flag, value = extraction_arguments(extraction)
    assert flag == "--metric-extraction"
    assert json.loads(value) == extraction
    assert extraction_arguments([]) == []


@pytest.mark.parametrize(
    "safe",
    [r"loss=([0-9.e-]+)", r"(\d{3}-)+", r"(?>a+)+", r"(a++)+", r"(?:ab?)+", r"(?:\d{1,3}\.){3}"],
)
def test_patterns_that_cannot_blow_up_are_allowed(safe: str) -> None:
    assert backtracking_risk(safe) is None


@pytest.mark.parametrize("risky", [r"(?:x|(y+))*z", r"(?=(a+)+)b", r"(a+)*?b", r"((a|b)*c?)+"])
def test_nested_repeats_are_found_anywhere(risky: str) -> None:
    assert backtracking_risk(risky) is not None


EPOCHS = {"name": "epochs", "type": "int", "default": 10}


def test_a_total_is_a_number_or_a_numeric_parameter_and_the_run_s_value_is_the_chart_s() -> None:
    by_name = dict(LOSS, regex=r"epoch (?P<step>\d+) loss=([0-9.]+)", total="epochs")
    document = parse_document(AlgorithmDocument, algorithm(by_name) | {"parameters": [EPOCHS]})
    chart = document.metric_definitions[0]
    assert chart.extraction({"epochs": 40})["meta"]["total"] == 40.0
    assert "total" not in chart.extraction({})["meta"]  # no value for the run: no progress
    assert "total" not in chart.extraction({"epochs": 0})["meta"]
    fixed = MetricDefinition.model_validate(dict(LOSS, total=1500)).extraction()
    assert fixed["meta"]["total"] == 1500.0
    meta = json.dumps({"id": "1", "metas": [fixed["meta"]]})
    assert parse_meta(meta).problems == [] and parse_meta(meta).charts[0].total == 1500.0


def test_a_total_that_names_no_numeric_parameter_is_refused_saying_which_there_are() -> None:
    with_text = {"name": "optimizer", "type": "string", "default": "adam"}
    with pytest.raises(InvalidInput) as refused:
        parse_document(
            AlgorithmDocument,
            algorithm(dict(LOSS, total="optimizer")) | {"parameters": [EPOCHS, with_text]},
        )
    assert [str(problem) for problem in refused.value.problems] == [
        "metric_definitions: chart 'loss': total 'optimizer' must be a number or the name of an "
        "int or float parameter of the algorithm (its int and float parameters: epochs)"
    ]
    assert problems(dict(LOSS, total=-3)) == [
        "metric_definitions.0.total: -3 must be a number above 0 or a parameter's name"
    ]
    assert problems(dict(LOSS, total="two words")) == [
        "metric_definitions.0.total: 'two words' must be a number above 0 or a parameter's name"
    ]
