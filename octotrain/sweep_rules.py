"""The rules of a sweep that need its task: every swept parameter is one the task's algorithm
declares, its range lies within the declared bounds, the objective is a chart line the task's
runs write, and as many trials at once fit in the project's quota. Each broken rule names its
field; every problem is reported at once (``octotrain.documents.judge_document``).

What the charts are and what the quota allows are asked of the caller (``SweepContext``): the
charts come from the algorithm's metric definitions and from what the task's earlier runs wrote,
which only the hooks can read, and the quota is the configured launcher's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from octotrain.documents import judge_document
from octotrain.errors import FieldProblem
from octotrain.parameters import parameter_problem
from octotrain.sweep_spec import MAX_GRID_POINTS, SweepSpec, SweptParameter

# Chart name -> its lines (the series a trial's objective may name).
Charts = Mapping[str, list[str]]


@dataclass(frozen=True)
class SweepContext:
    """What a sweep is judged against: its task's algorithm's parameter declarations, the
    charts its runs write (``charts``, and where they were found, for the message), and why
    ``n`` of its runs could not run at once (None when they can)."""

    algorithm: str
    declarations: list[dict[str, Any]]
    charts: Charts
    charts_from: str
    concurrency_refusal: Callable[[int], str | None]


def judge_sweep(document: object, context: SweepContext) -> SweepSpec:
    """``document`` as a sweep of the task ``context`` describes, or ``InvalidInput``."""
    return judge_document(SweepSpec, document, lambda fields: sweep_problems(fields, context))


def sweep_problems(fields: dict[str, Any], context: SweepContext) -> list[FieldProblem]:
    """Every rule broken by the fields that are valid on their own."""
    problems: list[FieldProblem] = []
    parameters: dict[str, SweptParameter] = fields.get("parameters") or {}
    declared = {item["name"]: item for item in context.declarations}
    for name, swept in parameters.items():
        declaration = declared.get(name)
        if declaration is None:
            known = ", ".join(declared) or "none"
            problems.append(
                FieldProblem(
                    f"parameters.{name}",
                    f"is not a parameter of algorithm "
                    f"{context.algorithm} (its parameters: {known})",
                )
            )
            continue
        problems += _fits(f"parameters.{name}", swept, declaration)
    if parameters and all(swept.type == "fixed" for swept in parameters.values()):
        problems.append(FieldProblem("parameters", "at least one must vary (all are fixed)"))
    search = fields.get("search")
    if search is not None and search.sampler == "grid" and parameters:
        problems += _grid_problems(parameters)
    objective = fields.get("objective")
    if objective is not None:
        problems += _objective_problems(objective.chart, objective.series, context)
    concurrency = fields.get("concurrency")
    if isinstance(concurrency, int) and (why := context.concurrency_refusal(concurrency)):
        problems.append(FieldProblem("concurrency", why))
    return problems


def _fits(field: str, swept: SweptParameter, declaration: dict[str, Any]) -> list[FieldProblem]:
    """The swept values against the parameter's declaration: its type, its bounds, its
    choices."""
    kind = declaration.get("type", "string")
    if swept.type in ("int", "float"):
        if kind not in ("int", "float"):
            return [
                FieldProblem(
                    f"{field}.type",
                    f"an {swept.type} range needs an int or float "
                    f"parameter; {declaration['name']} is {kind}",
                )
            ]
        if kind == "int" and swept.type == "float":
            return [
                FieldProblem(
                    f"{field}.type",
                    f"{declaration['name']} is an int parameter: sweep it as an int range",
                )
            ]
        problems = []
        for bound in ("low", "high"):
            value = getattr(swept, bound)
            value = int(value) if kind == "int" else value
            if (problem := parameter_problem(declaration, value)) is not None:
                low, high = declaration.get("min"), declaration.get("max")
                rule = f"must lie within the parameter's bounds [{low}, {high}], got {value}"
                problems.append(
                    FieldProblem(f"{field}.{bound}", rule if "within" in problem else problem)
                )
        return problems
    values = swept.choices if swept.type == "choice" else [swept.value]
    where = "choices" if swept.type == "choice" else "value"
    problems = []
    for position, value in enumerate(values):
        problem = parameter_problem(declaration, value)
        if problem is not None:
            at = f"{field}.{where}.{position}" if swept.type == "choice" else f"{field}.{where}"
            problems.append(FieldProblem(at, problem))
    return problems


def _grid_problems(parameters: dict[str, SweptParameter]) -> list[FieldProblem]:
    problems = [
        FieldProblem(f"parameters.{name}.step", "a grid search needs a step for each range")
        for name, swept in parameters.items()
        if swept.type in ("int", "float") and swept.step is None
    ]
    if problems:
        return problems
    size = math.prod(swept.grid_count() for swept in parameters.values())
    if size > MAX_GRID_POINTS:
        return [
            FieldProblem(
                "search.sampler",
                f"the grid has {size} points, at most "
                f"{MAX_GRID_POINTS}: widen the steps or sweep fewer values",
            )
        ]
    return []


def _objective_problems(chart: str, series: str, context: SweepContext) -> list[FieldProblem]:
    lines = context.charts.get(chart)
    if lines is None:
        known = ", ".join(sorted(context.charts)) or "none"
        return [
            FieldProblem(
                "objective.chart",
                f"'{chart}' is not a chart algorithm "
                f"{context.algorithm} writes ({context.charts_from}: {known})",
            )
        ]
    if series not in lines:
        return [
            FieldProblem(
                "objective.series",
                f"chart '{chart}' has no line '{series}' (its lines: {', '.join(lines)})",
            )
        ]
    return []
