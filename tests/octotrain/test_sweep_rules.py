"""A sweep's rules, each with its field: the document's own (ranges, types, one field against
another) and those against its task (declared parameters and bounds, the charts its runs write,
the quota)."""

from __future__ import annotations

from typing import Any

import pytest

from octotrain.errors import InvalidInput
from octotrain.sweep_rules import SweepContext, judge_sweep
from octotrain.sweep_spec import SweepSpec

CONTEXT = SweepContext(
    algorithm="toy",
    declarations=[
        {"name": "lr", "type": "float", "min": 0.0, "max": 1.0},
        {"name": "layers", "type": "int", "min": 1, "max": 8},
        {"name": "opt", "type": "enum", "choices": ["sgd", "adam"]},
        {"name": "tag", "type": "string"},
    ],
    charts={"loss": ["loss"], "fit": ["mse", "r2"]},
    charts_from="the test's charts",
    concurrency_refusal=lambda runs: "beyond the quota" if runs > 4 else None,
)
VALID: dict[str, Any] = {
    "name": "s",
    "parameters": {"lr": {"type": "float", "low": 0.01, "high": 0.5, "log": True}},
    "objective": {"chart": "fit", "series": "mse"},
    "budget": {"trials": 4},
}


def problems(document: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(InvalidInput) as refused:
        judge_sweep(document, CONTEXT)
    return {problem.field: problem.rule for problem in refused.value.problems}


def test_a_valid_sweep_is_kept_as_given() -> None:
    spec = judge_sweep(VALID, CONTEXT)
    assert isinstance(spec, SweepSpec)
    assert (spec.search.sampler, spec.concurrency, spec.early_stopping.pruner) == (
        "tpe",
        2,
        "median",
    )


@pytest.mark.parametrize(
    ("parameters", "field", "rule"),
    [
        (
            {"lr": {"type": "float", "low": 0.5, "high": 0.1}},
            "parameters.lr",
            "low (0.5) must not be greater than high (0.1)",
        ),
        (
            {"lr": {"type": "float", "low": 0, "high": 0.1, "log": True}},
            "parameters.lr",
            "a log scale needs low above 0, got 0",
        ),
        (
            {"lr": {"type": "float", "low": -1, "high": 0.1}},
            "parameters.lr.low",
            "must lie within the parameter's bounds [0.0, 1.0], got -1",
        ),
        (
            {"layers": {"type": "float", "low": 1, "high": 2}},
            "parameters.layers.type",
            "layers is an int parameter: sweep it as an int range",
        ),
        (
            {"tag": {"type": "int", "low": 1, "high": 2}},
            "parameters.tag.type",
            "an int range needs an int or float parameter; tag is string",
        ),
        (
            {"opt": {"type": "fixed", "value": "rms"}},
            "parameters.opt.value",
            "must be one of ['sgd', 'adam'], got 'rms'",
        ),
        (
            {"lr": {"type": "choice", "choices": []}},
            "parameters.lr",
            "a choice needs a non-empty list of choices",
        ),
        (
            {"lr": {"type": "fixed", "value": 0.1}},
            "parameters",
            "at least one must vary (all are fixed)",
        ),
    ],
)
def test_each_parameter_rule_names_its_field(parameters: dict, field: str, rule: str) -> None:
    assert problems(VALID | {"parameters": parameters})[field] == rule


def test_the_objective_must_be_a_line_of_a_chart_the_task_writes() -> None:
    unknown = problems(VALID | {"objective": {"chart": "acc", "series": "top1"}})
    assert unknown["objective.chart"] == (
        "'acc' is not a chart algorithm toy writes (the test's charts: fit, loss)"
    )
    line = problems(VALID | {"objective": {"chart": "fit", "series": "top1"}})
    assert line["objective.series"] == "chart 'fit' has no line 'top1' (its lines: mse, r2)"


def test_a_grid_needs_steps_and_a_bounded_size() -> None:
    grid = VALID | {"search": {"sampler": "grid"}}
    assert problems(grid)["parameters.lr.step"] == "a grid search needs a step for each range"
    huge = grid | {"parameters": {"lr": {"type": "float", "low": 0.0, "high": 1.0, "step": 0.0001}}}
    assert problems(huge)["search.sampler"].startswith("the grid has 10001 points, at most 1000")
    fine = grid | {
        "parameters": {
            "layers": {"type": "int", "low": 1, "high": 8, "step": 2},
            "opt": {"type": "choice", "choices": ["sgd", "adam"]},
        }
    }
    assert judge_sweep(fine, CONTEXT).grid_size() == 8


def test_a_budget_of_zero_and_concurrency_beyond_the_quota_are_refused_together() -> None:
    found = problems(VALID | {"budget": {"trials": 0, "node_hours": 0}, "concurrency": 5})
    assert found == {
        "budget.trials": "must be at least 1, got 0",
        "budget.node_hours": "must be more than 0, got 0",
        "concurrency": "beyond the quota",
    }
