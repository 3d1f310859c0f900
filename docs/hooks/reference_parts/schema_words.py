"""A JSON schema in words: a value's type, the rules it must meet, an object's fields as a
table. Used by the parts made from a JSON schema: the REST API's (its OpenAPI document), a
metric definition's (its pydantic model) and the DAG's Params (their schemas)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .markdown import cell, code, json_text


def schema_table(schema: dict[str, Any], link: Callable[[str], str]) -> str:
    """An object schema's fields: name, type, whether required, default, rules and meaning;
    empty for a schema that is not an object of named fields."""
    properties = schema.get("properties")
    if not properties:
        return ""
    required = set(schema.get("required", []))
    rows = ["| field | type | required | rule and meaning |", "|---|---|---|---|"]
    for name, field in properties.items():
        words = [f"default {code(json_text(field['default']))}"] if "default" in field else []
        words += rules(field, link)
        if field.get("description"):
            words.append(cell(field["description"]))
        rows.append(
            f"| `{name}` | {type_of(field, link)} | {'yes' if name in required else 'no'} | "
            f"{'; '.join(words)} |"
        )
    if schema.get("additionalProperties") is False:
        rows.append("| (any other) | | | refused |")
    return "\n".join(rows) + "\n"


def type_of(schema: dict[str, Any], link: Callable[[str], str]) -> str:
    """A schema's type in words: ``integer or null``, ``list of [RunView](#…)``."""
    if "$ref" in schema:
        return link(schema["$ref"].rsplit("/", 1)[-1])
    for keyword in ("anyOf", "oneOf", "allOf"):
        if keyword in schema:
            kinds = [type_of(member, link) for member in schema[keyword]]
            return " or ".join(dict.fromkeys(kinds))
    kinds = schema.get("type")
    if kinds is None:
        return "any" if "enum" not in schema else "one of its values"
    if isinstance(kinds, list):
        return " or ".join(_kind(kind, schema, link) for kind in kinds)
    return _kind(kinds, schema, link)


def _kind(kind: str, schema: dict[str, Any], link: Callable[[str], str]) -> str:
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"list of {_grouped(type_of(schema['items'], link))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object (key → {type_of(schema['additionalProperties'], link)})"
    if kind == "string" and "format" in schema:
        return f"string ({schema['format']})"
    return kind


def _grouped(kind: str) -> str:
    """``list of (number or null)``, not the ``list of number or null`` that reads as two."""
    return f"({kind})" if " or " in kind else kind


def rules(schema: dict[str, Any], link: Callable[[str], str]) -> list[str]:
    """What a value must be beyond its type, in words, from the schema's keywords."""
    words = []
    if "enum" in schema:
        words.append("one of " + ", ".join(code(json_text(value)) for value in schema["enum"]))
    words += _range(schema, "minimum", "maximum", "")
    if "exclusiveMinimum" in schema:
        words.append(f"above {_number(schema['exclusiveMinimum'])}")
    words += _range(schema, "minLength", "maxLength", " characters")
    words += _range(schema, "minItems", "maxItems", " items")
    words += _range(schema, "minProperties", "maxProperties", " keys")
    if "pattern" in schema:
        words.append(f"matches {code(schema['pattern'])}")
    if "contentMediaType" in schema:
        words.append(f"a file ({code(schema['contentMediaType'])})")
    for keyword, label in (
        ("items", "each item"),
        ("additionalProperties", "each value"),
        ("propertyNames", "each key"),
    ):
        if isinstance(schema.get(keyword), dict) and (inner := rules(schema[keyword], link)):
            words.append(f"{label}: {', '.join(inner)}")
    for member in schema.get("anyOf", []) + schema.get("oneOf", []):
        words += rules(member, link)
    if "properties" in schema:  # an object shown inline (a named one is a link)
        words.append(
            "keys: "
            + "; ".join(
                _inline_field(name, field, schema, link)
                for name, field in schema["properties"].items()
            )
        )
        if schema.get("additionalProperties") is False:
            words.append("no other keys")
    return words


def _inline_field(
    name: str, field: dict[str, Any], parent: dict[str, Any], link: Callable[[str], str]
) -> str:
    said = [type_of(field, link)]
    if name in parent.get("required", []):
        said.append("required")
    return f"`{name}` ({', '.join(said + rules(field, link))})"


def _range(schema: dict[str, Any], low_key: str, high_key: str, unit: str) -> list[str]:
    low, high = schema.get(low_key), schema.get(high_key)
    if unit and {low, high} <= {1, None}:  # "at most 1 item", not "1 items"
        unit = unit.removesuffix("s")
    if low is not None and high is not None:
        return [f"{_number(low)} to {_number(high)}{unit}"]
    if low is not None:
        return [f"at least {_number(low)}{unit}"]
    if high is not None:
        return [f"at most {_number(high)}{unit}"]
    return []


def _number(value: float) -> str:
    """A bound as written in the code (FastAPI's document makes ``4096`` ``4096.0``)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
