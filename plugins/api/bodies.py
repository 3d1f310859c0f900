"""Request bodies read as raw JSON and judged by the services, documented with the shape of
the document model in the OpenAPI description.

The routes do not let FastAPI validate bodies against the models: the services must see the
whole document so that the rules needing the catalog are checked too and every problem comes
back in one answer.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/$defs/"):
            return _inline(definitions[reference.removeprefix("#/$defs/")], definitions)
        return {key: _inline(value, definitions) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(item, definitions) for item in node]
    return node


def document_schema(model: type[BaseModel], *, partial: bool = False) -> dict[str, Any]:
    """``model``'s JSON schema with its definitions inlined; ``partial`` for changes (every
    field optional, merged into the current document)."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})
    inlined: dict[str, Any] = _inline(schema, definitions)
    if partial:
        inlined.pop("required", None)
    return inlined


def json_body(
    model: type[BaseModel], *, partial: bool = False, required: bool = True
) -> dict[str, Any]:
    """``openapi_extra`` documenting a JSON request body shaped like ``model``; one that is
    not ``required`` may be left out (every field then takes its default)."""
    return {
        "requestBody": {
            "required": required,
            "content": {"application/json": {"schema": document_schema(model, partial=partial)}},
        }
    }
