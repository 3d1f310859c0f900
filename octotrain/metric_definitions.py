"""Metric definitions: charts for training code that was never written for Octotrain.

An algorithm may declare, as SageMaker's ``MetricDefinitions`` do, a chart name and a regular
expression over the lines its training prints: ``{"name": "loss", "regex":
"loss=([0-9.e-]+)"}``. The node's wrapper (``agent/log_metrics.py``) matches every line of the
train log and appends the points to the METRICS files the charts read, so an unmodified script
that prints ``loss=0.25`` gets a chart.

The regex says what a point holds. Without named groups its first group is the value, drawn on
the y axis ``ys[0]`` (the chart's name by default). Named groups are the chart's lines: one
named after the x axis (``x``, ``step`` by default) gives x, else x counts the chart's points
(1, 2, ...); the others are its series (up to four, one y axis), or, when ``ys`` names two axes,
exactly those two. ``total``, the x at which the training ends (a number, or the name of one of
the algorithm's int or float parameters, such as ``epochs``, whose run value it takes), makes
the chart the node's progress (``octotrain.node_progress``) for a script that writes no
``progress.json``. The manual's chart rules (``octotrain.metrics_meta``) apply to what is
derived, and a regex is refused when it does not compile, is longer than
``MAX_REGEX_LENGTH``, has no group or could backtrack catastrophically.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import Field, StrictBool, StrictStr, ValidationInfo, field_validator

from octotrain.documents import Document, Number
from octotrain.metrics_meta import (
    DESCRIPTION,
    DESCRIPTION_RULE,
    MAX_CHARTS,
    MAX_SERIES,
    NAME,
    NAME_RULE,
    chart_total,
)
from octotrain.parameters import PARAMETER_NAME_PATTERN
from octotrain.regex_risk import backtracking_risk, compile_error

# SageMaker's own limit on a metric definition's regex.
MAX_REGEX_LENGTH = 500
DEFAULT_X = "step"
PARAMETER_NAME = re.compile(PARAMETER_NAME_PATTERN)


def _label(value: str) -> str:
    if NAME.fullmatch(value) is None:
        raise ValueError(f"{value!r} {NAME_RULE}")
    return value


class MetricDefinition(Document):
    """One chart extracted from the train log (fields in the order they are judged: the
    regex last, since its groups must fit the chart's names)."""

    # The descriptions are also the reference's: docs/reference/metrics-format.md is generated
    # from them.

    name: StrictStr = Field(
        description="the chart's name, unique among the algorithm's charts (and its y axis "
        f"unless `ys` names them); {NAME_RULE}"
    )
    x: StrictStr = Field(
        DEFAULT_X,
        description="the x axis: the named group of `regex` that holds x, or, when it has no "
        f"group of that name, x counts the chart's points (1, 2, ...); {NAME_RULE}",
    )
    ys: list[StrictStr] = Field(
        default_factory=list,
        max_length=2,
        description="the y axes: one (the chart's name when empty) or two (left, right), "
        f"different; two must be the named groups of `regex` besides x; each {NAME_RULE}",
    )
    description: StrictStr = Field(
        "", description=f"shown with the chart (its name when empty); {DESCRIPTION_RULE}"
    )
    smooth: StrictBool = Field(False, description="draw the chart's lines smoothed")
    total: Number | StrictStr | None = Field(
        None,
        description="the x at which the training ends: a number above 0, or the name of one "
        "of the algorithm's int or float parameters (its value in the run); the chart then "
        "gives the node's progress for a training that writes no `progress.json`",
    )
    regex: StrictStr = Field(
        description="matched against each line of the train log: without named groups its "
        "first group is the value; named groups are x (the one named as `x`) and the chart's "
        f"lines, up to {MAX_SERIES} (with two `ys`, exactly those two); at most "
        f"{MAX_REGEX_LENGTH} characters, and it must compile, have a group and not risk "
        "catastrophic backtracking"
    )

    @field_validator("name", "x")
    @classmethod
    def _names(cls, value: str) -> str:
        return _label(value)

    @field_validator("ys")
    @classmethod
    def _axes(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("the two axes must have different names")
        return [_label(axis) for axis in value]

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        if value and DESCRIPTION.fullmatch(value) is None:
            raise ValueError(f"{value!r} {DESCRIPTION_RULE}")
        return value

    @field_validator("total")
    @classmethod
    def _total(cls, value: float | str | None) -> float | str | None:
        if isinstance(value, str):
            if PARAMETER_NAME.fullmatch(value) is None:
                raise ValueError(f"{value!r} must be a number above 0 or a parameter's name")
        elif value is not None and chart_total(value) is None:
            raise ValueError(f"{value} must be a number above 0 or a parameter's name")
        return value

    @field_validator("regex")
    @classmethod
    def _regex(cls, value: str, info: ValidationInfo) -> str:
        if len(value) > MAX_REGEX_LENGTH:
            raise ValueError(f"must be at most {MAX_REGEX_LENGTH} characters, got {len(value)}")
        problem = compile_error(value)
        if problem:
            raise ValueError(f"does not compile: {problem}")
        problem = backtracking_risk(value)
        if problem:
            raise ValueError(problem)
        pattern = re.compile(value)
        if pattern.groups == 0:
            raise ValueError("has no capture group: put the value in one, as in loss=([0-9.e-]+)")
        for group in pattern.groupindex:
            _label(group)
        if {"name", "x", "ys"} <= info.data.keys():
            _lines(pattern, x=info.data["x"], ys=list(info.data["ys"]) or [info.data["name"]])
        return value

    @property
    def axes(self) -> list[str]:
        return list(self.ys) or [self.name]

    def total_of(self, parameters: Mapping[str, Any]) -> float | None:
        """The chart's total for a run with these parameter values: the number declared, or
        the named parameter's value; None when there is none, or it is not above 0."""
        return chart_total(
            parameters.get(self.total) if isinstance(self.total, str) else self.total
        )

    def chart_meta(self, parameters: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The chart as ``metrics.json`` declares it (docs/concepts/environment-contract.md), for a
        run with these parameter values (its ``total``)."""
        lines = [key for _, key in _lines(re.compile(self.regex), x=self.x, ys=self.axes)]
        meta: dict[str, Any] = {
            "name": self.name,
            "x": self.x,
            "ys": self.axes,
            "description": self.description or self.name,
            "smooth": "true" if self.smooth else "false",
            "with_timestamp": "false",
        }
        if lines != self.axes:
            meta["series"] = lines
        total = self.total_of(parameters or {})
        if total is not None:
            meta["total"] = total
        return meta

    def extraction(self, parameters: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What the node's wrapper needs to extract this chart (``agent/log_metrics.py``):
        the regex, its chart's meta, the group holding x (None: count points), and which
        group fills which key of a point (for a run with these parameter values)."""
        pattern = re.compile(self.regex)
        return {
            "regex": self.regex,
            "meta": self.chart_meta(parameters),
            "x_group": self.x if self.x in pattern.groupindex else None,
            "lines": [
                {"group": group, "key": key}
                for group, key in _lines(pattern, x=self.x, ys=self.axes)
            ],
        }


def _lines(pattern: re.Pattern[str], *, x: str, ys: list[str]) -> list[tuple[int | str, str]]:
    """Each line of the chart as (the group holding it, its key in a point); ValueError when
    the groups do not fit the manual's rules for ``x`` and ``ys``."""
    if x in ys:
        raise ValueError(f"x '{x}' is also a y axis: name them differently")
    named = [group for group in pattern.groupindex if group != x]
    if len(ys) == 2:
        if sorted(named) != sorted(ys):
            raise ValueError(
                f"with two y axes, its named groups must be the axes {ys[0]} and {ys[1]} "
                f"(and optionally x), got {', '.join(named) or 'none'}"
            )
        return [(axis, axis) for axis in ys]
    if not named:
        numbered = set(pattern.groupindex.values())
        unnamed = [number for number in range(1, pattern.groups + 1) if number not in numbered]
        if not unnamed:
            raise ValueError(f"its only group is the x axis '{x}': add one for the value")
        return [(unnamed[0], ys[0])]
    if len(named) > MAX_SERIES:
        raise ValueError(f"has {len(named)} named groups: a chart has at most {MAX_SERIES} series")
    return [(group, group) for group in named]


def unique_charts(
    definitions: list[MetricDefinition], *, numeric_parameters: Collection[str] | None
) -> list[MetricDefinition]:
    """The manual's rules across an algorithm's charts: at most six, names unique; a total
    given by name names one of the algorithm's int or float parameters (None: not judged)."""
    if len(definitions) > MAX_CHARTS:
        raise ValueError(f"at most {MAX_CHARTS} charts, got {len(definitions)}")
    names = [definition.name for definition in definitions]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"chart names must be unique; repeated: {', '.join(repeated)}")
    for definition in definitions if numeric_parameters is not None else []:
        if isinstance(definition.total, str) and definition.total not in numeric_parameters:
            known = ", ".join(numeric_parameters) or "none"
            raise ValueError(
                f"chart '{definition.name}': total '{definition.total}' must be a number or "
                f"the name of an int or float parameter of the algorithm (its int and float "
                f"parameters: {known})"
            )
    return definitions


def extraction_arguments(extraction: list[dict[str, Any]]) -> list[str]:
    """The node wrapper's arguments that make it extract these charts from the train log
    (``agent/run_training.py --metric-extraction``); none without definitions."""
    if not extraction:
        return []
    return ["--metric-extraction", json.dumps(extraction, ensure_ascii=False)]
