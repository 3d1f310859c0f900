"""A hyper-parameter sweep as a user writes it: which of the task's parameters vary and how, the
objective, the search, the budget, how many trials at once, early stopping.

Only the rules that need nothing but the document live here (types, ranges, sizes, one field
against another); the rules that need the task, its algorithm and the project's quota live in
``octotrain.sweep_rules``, which applies both, as ``octotrain.task_rules`` does for a task.

The search itself is Optuna's (``hooks/sweeps/sweep_study.py``): a ``SweptParameter`` becomes one
of its distributions, ``search.sampler`` one of its samplers, ``early_stopping.pruner`` one of
its pruners.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, StrictBool, StrictInt, StrictStr, model_validator

from octotrain.documents import Description, Document, Name, Number, Scalar
from octotrain.metrics_meta import NAME, NAME_RULE
from octotrain.parameters import PARAMETER_NAME_PATTERN

MAX_SWEPT_PARAMETERS = 32
MAX_CHOICES = 64
MAX_TRIALS = 1000
MAX_CONCURRENCY = 64
MAX_CONSECUTIVE_FAILURES = 100
# A grid's every combination is a trial: more than the budget's most is refused.
MAX_GRID_POINTS = MAX_TRIALS
ParameterKind = Literal["int", "float", "choice", "fixed"]
Direction = Literal["minimize", "maximize"]
Sampler = Literal["tpe", "random", "grid"]
Pruner = Literal["none", "median", "successive_halving", "hyperband"]


def _label(value: str) -> str:
    if NAME.fullmatch(value) is None:
        raise ValueError(NAME_RULE)
    return value


class SweptParameter(Document):
    """How one parameter varies: ``int`` or ``float`` between ``low`` and ``high`` (both
    included; ``log`` samples on a log scale, ``step`` on a grid of that step), ``choice``
    among ``choices``, or ``fixed`` at ``value`` for every trial."""

    type: ParameterKind
    low: Number | None = None
    high: Number | None = None
    log: StrictBool = False
    step: Number | None = Field(default=None, gt=0)
    choices: Annotated[list[Scalar], Field(max_length=MAX_CHOICES)] = Field(default_factory=list)
    value: Scalar | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        ranged = self.type in ("int", "float")
        if ranged:
            if self.low is None or self.high is None:
                raise ValueError(f"an {self.type} range needs both low and high")
            if not (math.isfinite(self.low) and math.isfinite(self.high)):
                raise ValueError("low and high must be finite numbers")
            if self.low > self.high:
                raise ValueError(f"low ({self.low}) must not be greater than high ({self.high})")
            if self.type == "int" and not all(
                float(bound).is_integer() for bound in (self.low, self.high)
            ):
                raise ValueError("an int range needs whole numbers for low and high")
            if self.log and self.low <= 0:
                raise ValueError(f"a log scale needs low above 0, got {self.low}")
            if self.log and self.step is not None:
                raise ValueError("give either log or step, not both")
        elif any(v is not None for v in (self.low, self.high, self.step)) or self.log:
            raise ValueError("low, high, log and step are only for int and float ranges")
        if self.type == "choice":
            if not self.choices:
                raise ValueError("a choice needs a non-empty list of choices")
            if len({repr(choice) for choice in self.choices}) != len(self.choices):
                raise ValueError("choices must not repeat")
        elif self.choices:
            raise ValueError("choices are only for the choice type")
        if self.type == "fixed" and self.value is None:
            raise ValueError("a fixed parameter needs its value")
        if self.type != "fixed" and self.value is not None:
            raise ValueError("value is only for the fixed type")
        return self

    def grid_count(self) -> int:
        """How many values a grid search tries (the range on its ``step``)."""
        if self.type == "choice":
            return len(self.choices)
        if self.type == "fixed":
            return 1
        assert self.low is not None and self.high is not None and self.step is not None
        return math.floor((self.high - self.low) / self.step + 1e-9) + 1

    def grid_points(self) -> list[bool | int | float | str]:
        """Every value a grid search tries: the choices, the fixed value, or the range on its
        ``step`` (a grid larger than ``MAX_GRID_POINTS`` is refused before it is built)."""
        if self.type == "choice":
            return list(self.choices)
        if self.type == "fixed":
            return [self.value] if self.value is not None else []
        assert self.low is not None and self.step is not None
        points = [self.low + index * self.step for index in range(self.grid_count())]
        return [int(point) if self.type == "int" else point for point in points]


class Objective(Document):
    """What a trial is judged by: a line (``series``) of one of the charts its node 0 writes (a
    METRICS chart, or a metric definition's chart from its log), its last value (``final``) or
    its best, minimised or maximised."""

    chart: Annotated[StrictStr, AfterValidator(_label)]
    series: Annotated[StrictStr, AfterValidator(_label)]
    direction: Direction = "minimize"
    take: Literal["final", "best"] = "final"


class Search(Document):
    """Optuna's sampler: TPE (the default), random, or grid (every combination, in turn)."""

    sampler: Sampler = "tpe"
    seed: StrictInt | None = Field(default=None, ge=0, le=2**32 - 1)


class Budget(Document):
    """When the sweep stops starting trials: after ``trials`` of them, once its trials together
    held ``node_hours`` (as usage accounting bills them), or ``wall_minutes`` after it started
    (then its running trials are stopped too)."""

    trials: StrictInt = Field(ge=1, le=MAX_TRIALS)
    node_hours: Number | None = Field(default=None, gt=0)
    wall_minutes: StrictInt | None = Field(default=None, ge=1, le=60 * 24 * 90)


class EarlyStopping(Document):
    """Optuna's pruner: none, median stopping, successive halving or Hyperband; no trial is
    stopped before its objective's chart reached ``min_steps`` (its x, e.g. epochs)."""

    pruner: Pruner = "median"
    min_steps: StrictInt = Field(default=5, ge=0, le=10_000_000)
    # Median stopping compares a trial with this many finished ones at least.
    startup_trials: StrictInt = Field(default=4, ge=0, le=MAX_TRIALS)


class SweepSpec(Document):
    """A sweep of one training task, as the console's form, the REST body or a YAML file
    gives it."""

    name: Name
    description: Description = ""
    parameters: dict[
        Annotated[StrictStr, Field(pattern=PARAMETER_NAME_PATTERN)], SweptParameter
    ] = Field(min_length=1, max_length=MAX_SWEPT_PARAMETERS)
    objective: Objective
    search: Search = Field(default_factory=Search)
    budget: Budget
    concurrency: StrictInt = Field(default=2, ge=1, le=MAX_CONCURRENCY)
    early_stopping: EarlyStopping = Field(default_factory=EarlyStopping)
    # The sweep ends itself after this many trials failed in a row, saying why.
    max_consecutive_failures: StrictInt = Field(default=3, ge=1, le=MAX_CONSECUTIVE_FAILURES)

    def grid_size(self) -> int:
        size = 1
        for parameter in self.parameters.values():
            size *= parameter.grid_count()
        return size

    def fixed_values(self) -> dict[str, bool | int | float | str]:
        return {
            name: parameter.value
            for name, parameter in self.parameters.items()
            if parameter.type == "fixed" and parameter.value is not None
        }
