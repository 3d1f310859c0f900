"""Reading user documents (REST bodies, YAML files, form posts) into pydantic models, with every
broken rule reported as a ``FieldProblem`` naming the field path and the rule in plain words.

The name and description rules of the manual apply to training tasks and to the catalog objects
alike, so they are spelled here once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictStr,
    ValidationError,
    WithJsonSchema,
)

from octotrain.argument_limits import text_value_problem, text_value_schema
from octotrain.errors import FieldProblem, InvalidInput

# Chinese (CJK unified ideographs, incl. extension A and compatibility) or English letters,
# digits, "_" and "-".
NAME_PATTERN = re.compile(r"[A-Za-z0-9_\-\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{1,64}")
NAME_RULE = "must be 1-64 characters of Chinese or English letters, digits, '_' and '-'"
DESCRIPTION_FORBIDDEN = "@^\\#$%&*<>'|\"/"
DESCRIPTION_MAX = 256
# Shown with a problem so that the user sees what was refused; long values are cut.
SHOWN_VALUE_MAX = 40

ModelT = TypeVar("ModelT", bound=BaseModel)


def _name_rule(value: str) -> str:
    if not NAME_PATTERN.fullmatch(value):
        raise ValueError(NAME_RULE)
    return value


def _no_control_characters(value: str) -> str:
    if any(ord(char) < 32 and char not in "\t\n" for char in value):
        raise ValueError("must not contain control characters")
    return value


def _description_rule(value: str) -> str:
    _no_control_characters(value)
    if len(value) > DESCRIPTION_MAX:
        raise ValueError(f"must be at most {DESCRIPTION_MAX} characters, got {len(value)}")
    found = sorted({char for char in value if char in DESCRIPTION_FORBIDDEN})
    if found:
        raise ValueError(
            f"must not contain any of {DESCRIPTION_FORBIDDEN}; found {' '.join(found)}"
        )
    return value


def _text_value_rule(value: str) -> str:
    problem = text_value_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _scalar(value: Any) -> bool | int | float | str:
    if isinstance(value, bool | int | float | str):
        return value
    raise ValueError(
        f"must be a boolean, an integer, a number or a string, got {type(value).__name__}"
    )


def _number(value: Any) -> int | float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise ValueError(f"must be a number, got {type(value).__name__}")


# The JSON schemas say the same as the validators, for the OpenAPI document and forms.
Name = Annotated[
    StrictStr,
    AfterValidator(_name_rule),
    WithJsonSchema({"type": "string", "pattern": f"^{NAME_PATTERN.pattern}$"}),
]
# An integer or a number, kept as given (a bound of 1 stays 1, not 1.0).
Number = Annotated[int | float, PlainValidator(_number), WithJsonSchema({"type": "number"})]
# A parameter value: one error for a value of none of the four types (not one per type).
Scalar = Annotated[
    bool | int | float | str,
    PlainValidator(_scalar),
    WithJsonSchema({"type": ["boolean", "integer", "number", "string"]}),
]
# Free text kept in the catalog's string columns (no NUL or other control characters).
PlainText = Annotated[
    StrictStr,
    AfterValidator(_no_control_characters),
    WithJsonSchema({"type": "string", "pattern": "^[^\\x00-\\x08\\x0b-\\x1f]*$"}),
]
# A value that reaches a training process as an environment variable's value: see
# ``octotrain.argument_limits`` (string parameters are judged against their declaration).
TextValue = Annotated[
    StrictStr,
    AfterValidator(_text_value_rule),
    WithJsonSchema({"type": "string", **text_value_schema()}),
]
# A reference by name to a catalog object; looked up as given, so only its size and the
# absence of control characters are checked here (a missing object is a catalog rule).
RefName = Annotated[PlainText, Field(min_length=1, max_length=64)]
RefVersion = Annotated[PlainText, Field(min_length=1, max_length=32)]
Description = Annotated[
    StrictStr,
    AfterValidator(_description_rule),
    WithJsonSchema(
        {
            "type": "string",
            "maxLength": DESCRIPTION_MAX,
            "pattern": "^[^" + re.escape(DESCRIPTION_FORBIDDEN) + "\\x00-\\x08\\x0b-\\x1f]*$",
        }
    ),
]


class Document(BaseModel):
    """A user document: unknown fields are errors (a typo must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def shown_value(value: Any) -> str:
    """``value`` as a problem quotes it: its repr, cut short (a refused value may be huge)."""
    text = repr(value)
    return text if len(text) <= SHOWN_VALUE_MAX else text[: SHOWN_VALUE_MAX - 3] + "..."


def problems_of(error: ValidationError) -> list[FieldProblem]:
    """pydantic's errors as field problems: dotted paths and rules a user can act on, in words
    ("give at least 1 item", not "List should have at least 1 item after validation")."""
    problems = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"])
        kind = item["type"]
        if kind in ("value_error", "assertion_error"):
            rule = item["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        else:
            rule = rule_in_words(kind, item.get("ctx") or {}, item.get("input"), item["msg"])
        problems.append(FieldProblem(field or "document", rule))
    return problems


def _bound(value: Any) -> Any:
    """A rule's bound as written: 0, not 0.0."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def rule_in_words(kind: str, ctx: dict[str, Any], value: Any, message: str) -> str:
    """One of pydantic's error types as a rule a person reads, with the value it refused."""
    got = f", got {shown_value(value)}"
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind == "too_short":
        return f"give at least {_plural(int(ctx['min_length']), 'item')}{got}"
    if kind == "too_long":
        return f"give at most {_plural(int(ctx['max_length']), 'item')}, got {ctx['actual_length']}"
    if kind == "string_too_short":
        least = int(ctx["min_length"])
        return "must not be empty" if least == 1 else f"must be at least {least} characters{got}"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters, got {len(str(value))}"
    words = {
        "greater_than_equal": f"must be at least {_bound(ctx.get('ge'))}",
        "greater_than": f"must be more than {_bound(ctx.get('gt'))}",
        "less_than_equal": f"must be at most {_bound(ctx.get('le'))}",
        "less_than": f"must be less than {_bound(ctx.get('lt'))}",
        "int_type": "must be a whole number",
        "int_parsing": "must be a whole number",
        "int_from_float": "must be a whole number",
        "float_type": "must be a number",
        "float_parsing": "must be a number",
        "bool_type": "must be true or false",
        "bool_parsing": "must be true or false",
        "string_type": "must be text",
        "list_type": "must be a list",
        "dict_type": "must be an object",
        "model_type": "must be an object",
        "literal_error": f"must be {ctx.get('expected')}",
        "enum": f"must be {ctx.get('expected')}",
    }
    if kind in words:
        return words[kind] + got
    return f"{message[:1].lower()}{message[1:]}{' (' + got[2:] + ')'}"


def parse_document(model: type[ModelT], document: object) -> ModelT:
    """``document`` as ``model``, or ``InvalidInput`` with every problem found."""
    if not isinstance(document, dict):
        raise InvalidInput.one("document", f"must be an object, got {type(document).__name__}")
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise InvalidInput(problems_of(error)) from None


def valid_fields(model: type[BaseModel], document: dict[str, Any]) -> dict[str, Any]:
    """The top-level fields of ``document`` that are valid on their own, validated.

    Used when the whole document is invalid, so that the rules needing the catalog can still
    check the fields that are fine and every problem is reported in one answer.
    """
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name not in document:
            if not info.is_required():
                fields[name] = info.get_default(call_default_factory=True)
            continue
        try:
            checked = model.__pydantic_validator__.validate_assignment(
                model.model_construct(), name, document[name]
            )
        except ValidationError:
            continue
        fields[name] = getattr(checked, name)
    return fields


def judge_document(
    model: type[ModelT],
    document: object,
    more_rules: Callable[[dict[str, Any]], list[FieldProblem]],
) -> ModelT:
    """``document`` as ``model`` if it breaks no rule, neither its own nor ``more_rules``
    (rules needing the catalog, given the fields that are valid); else every problem at once."""
    if not isinstance(document, dict):
        raise InvalidInput.one("document", f"must be an object, got {type(document).__name__}")
    try:
        parsed = model.model_validate(document)
    except ValidationError as error:
        problems = problems_of(error) + more_rules(valid_fields(model, document))
        raise InvalidInput(problems) from None
    problems = more_rules(dict(parsed))
    if problems:
        raise InvalidInput(problems)
    return parsed
