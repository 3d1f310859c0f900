"""Algorithm parameters: how an algorithm declares them, and whether a task's value fits.

An algorithm carries its parameter list (name, type, default, range or choices); a task may
change the values but not add names. Values reach the process as ``--name=value``.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Self

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from octotrain.argument_limits import MAX_TEXT_VALUE_LENGTH, text_value_problem
from octotrain.documents import Description, Document, Number, Scalar, shown_value
from octotrain.run_settings import RUN_SETTING_NAMES

PARAMETER_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$"
ParameterType = Literal["int", "float", "bool", "string", "enum"]


class ParameterDeclaration(Document):
    """One entry of an algorithm's parameter list."""

    name: StrictStr = Field(pattern=PARAMETER_NAME_PATTERN)
    type: ParameterType = "string"
    default: Scalar | None = None
    required: StrictBool = False
    min: Number | None = None
    max: Number | None = None
    choices: list[Scalar] = Field(default_factory=list, max_length=256)
    # A string parameter's own length limit; the platform's cap applies without one.
    max_length: StrictInt | None = Field(default=None, ge=1, le=MAX_TEXT_VALUE_LENGTH)
    description: Description = ""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.name in RUN_SETTING_NAMES:
            raise ValueError(
                f"parameter name '{self.name}' is reserved for a run's own settings "
                f"({', '.join(RUN_SETTING_NAMES)})"
            )
        if self.type == "enum" and not self.choices:
            raise ValueError("an enum parameter needs a non-empty list of choices")
        if self.type != "enum" and self.choices:
            raise ValueError("choices are only for enum parameters")
        if len({repr(choice) for choice in self.choices}) != len(self.choices):
            raise ValueError("choices must not repeat")
        if self.type not in ("int", "float") and (self.min is not None or self.max is not None):
            raise ValueError("min and max are only for int and float parameters")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) must not be greater than max ({self.max})")
        if self.type != "string" and self.max_length is not None:
            raise ValueError("max_length is only for string parameters")
        for position, choice in enumerate(self.choices):
            problem = isinstance(choice, str) and text_value_problem(choice)
            if problem:
                raise ValueError(f"choices.{position} {problem}")
        if self.default is not None:
            problem = parameter_problem(self.model_dump(), self.default)
            if problem:
                raise ValueError(f"default {problem}")
        return self


def parameter_problem(declaration: dict[str, Any], value: Any) -> str | None:
    """Why ``value`` does not fit a declared algorithm parameter, or None if it does."""
    kind = declaration.get("type", "string")
    checks = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
        "enum": lambda v: any(
            v == choice and type(v) is type(choice) for choice in declaration.get("choices", [])
        ),
    }
    if kind not in checks:
        return f"has unknown type '{kind}'"
    if not checks[kind](value):
        if kind == "enum":
            choices = declaration.get("choices", [])
            return f"must be one of {choices}, got {shown_value(value)}"
        return f"must be of type {kind}, got {shown_value(value)}"
    if isinstance(value, str):
        return text_value_problem(value, declaration.get("max_length"))
    if kind in ("int", "float"):
        if not math.isfinite(value):
            return f"must be a finite number, got {value!r}"
        low, high = declaration.get("min"), declaration.get("max")
        if (low is not None and value < low) or (high is not None and value > high):
            return f"must be within [{low}, {high}], got {value}"
    return None
