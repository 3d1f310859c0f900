"""The parts of docs/reference/metrics-format.md: ``metrics-json``, every key of a training's
``metrics.json``, from the fields of ``octotrain.metrics_meta.MetricsMeta`` and ``ChartMeta``
(the metadata of each says what the file holds there); ``metric-definitions``, every field of
an algorithm's metric definition, from the JSON schema of
``octotrain.metric_definitions.MetricDefinition``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .markdown import cell, code, json_text
from .schema_words import schema_table

CHART_ANCHOR = "metrics-json-chart"


def metrics_json_reference() -> str:
    """Every key of ``metrics.json``: the file's, then a chart's (an item of ``metas``)."""
    from octotrain.metrics_meta import ChartMeta, MetricsMeta

    return (
        "The file is a JSON object:\n\n" + file_keys_table(MetricsMeta) + "\n"
        f'<a id="{CHART_ANCHOR}"></a>Each chart of `metas` is a JSON object:\n\n'
        + file_keys_table(ChartMeta)
    )


def file_keys(model: type) -> Iterator[tuple[str, Any]]:
    """The keys of ``metrics.json`` that ``model``'s fields are read from, with each field: those
    whose metadata has a ``description`` (``octotrain.metrics_meta``)."""
    import dataclasses

    for field in dataclasses.fields(model):
        if "description" in field.metadata:
            yield field.metadata.get("key", field.name), field


def file_key_default(field: Any) -> tuple[bool, Any]:
    """Whether the file may leave the key out, and the value it is then taken to be: the
    metadata's ``default``, else the field's own, unless the metadata says it is required."""
    import dataclasses

    if field.metadata.get("required"):
        return False, None
    if "default" in field.metadata:
        return True, field.metadata["default"]
    if field.default is not dataclasses.MISSING:
        return True, field.default
    if field.default_factory is not dataclasses.MISSING:
        return True, field.default_factory()
    return False, None


def file_keys_table(model: type) -> str:
    """A table of the keys ``model``'s fields are read from: type, whether required, the value
    taken when left out, rule and meaning."""
    import typing

    hints = typing.get_type_hints(model)
    rows = ["| key | type | required | default | rule and meaning |", "|---|---|---|---|---|"]
    for key, field in file_keys(model):
        optional, default = file_key_default(field)
        shown = ("none" if default is None else code(json_text(default))) if optional else ""
        rows.append(
            f"| `{key}` | {_file_type(hints[field.name])} | {'no' if optional else 'yes'} | "
            f"{shown} | {cell(field.metadata['description'])} |"
        )
    return "\n".join(rows) + "\n"


def _file_type(annotation: Any) -> str:
    """A field's type as the file spells its value (a flag may be a JSON string too)."""
    import types
    import typing

    from octotrain.metrics_meta import FLAGS, ChartMeta

    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_file_type(kind) for kind in arguments if kind is not type(None))
    if origin is list:
        return f"list of {_file_type(arguments[0])}"
    if annotation is ChartMeta:
        return f"[chart](#{CHART_ANCHOR})"
    if annotation is bool:
        spelled = [code(json_text(flag)) for flag in FLAGS if isinstance(flag, str)]
        return "boolean, or " + " or ".join(spelled)
    return {str: "string", float: "number", int: "integer"}.get(annotation, str(annotation))


def metric_definitions_reference() -> str:
    """Every field of a metric definition, as an algorithm document declares one."""
    from octotrain.catalog.documents import AlgorithmDocument
    from octotrain.metric_definitions import MetricDefinition

    field = AlgorithmDocument.model_fields["metric_definitions"]
    return (
        f"An algorithm document's `metric_definitions`: {cell(field.description or '')}. "
        "Each is an object:\n\n" + schema_table(MetricDefinition.model_json_schema(), str)
    )
