"""The ``rest-api`` part (docs/reference/rest-api.md): every route of the REST API, from the
OpenAPI document the plugin serves (``plugins.app``): method, path and summary, by tag,
each parameter, its request body and its answers, linked to a "Schemas" section that shows
every schema of the document once, field by field (the objects an inline request body
describes by their title); and what each error answer means."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .airflow_home import private_airflow_home
from .markdown import cell, code, json_text
from .schema_words import rules, schema_table, type_of

METHODS = ("get", "post", "put", "patch", "delete")
SCHEMA_REF = "#/components/schemas/"
# What FastAPI says of an answer it was told nothing about: nothing worth repeating.
FASTAPI_DEFAULT_ANSWER = "Successful Response"


def rest_api_reference() -> str:
    """Every route of the OpenAPI document, by tag, with its parameters, body and answers; what
    its errors mean; then every schema they name, once."""
    document = openapi_document()
    schemas = SchemaIndex(document["components"]["schemas"])
    routes = [
        Route(method, path, operation, schemas) for method, path, operation in _operations(document)
    ]
    by_tag: dict[str, list[str]] = {}
    for route in routes:
        by_tag.setdefault(route.tag, []).append(route.markdown())
    lines = []
    for tag in sorted(by_tag):
        lines += [f"### {tag}\n", *by_tag[tag]]
    return "\n".join([*lines, _errors_section(routes), schemas.section()])


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document the plugin serves, made without a request."""
    private_airflow_home()
    from plugins.app import create_app

    return create_app().openapi()


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in document["paths"].items():
        for method in METHODS:
            if method in operations:
                yield method, path, operations[method]


def schema_anchor(name: str) -> str:
    """The anchor of a named schema in the "Schemas" section: its own, since a schema may be
    called as a tag is (``Usage``) and a heading's anchor would then be the tag's."""
    return f"schema-{name}"


class SchemaIndex:
    """The document's named schemas, each once: its components, and the objects its inline
    request bodies describe, named by their title.

    The plugin inlines a body's schema whole (``plugins.api.bodies``), nested documents
    included, so without this the same document would be spelled out at every route that takes
    it; a change's body is the same schema without ``required`` (every field optional).
    """

    def __init__(self, components: dict[str, Any]) -> None:
        self.named: dict[str, dict[str, Any]] = {}
        for name, schema in components.items():
            self.named[name] = self._children_hoisted(schema)

    def hoist(self, schema: Any) -> Any:
        """``schema`` with every titled object in it, itself included, replaced by a reference
        to its named schema."""
        if not isinstance(schema, dict):
            return schema
        hoisted = self._children_hoisted(schema)
        if "properties" in hoisted and "title" in hoisted:
            return {"$ref": SCHEMA_REF + self._named_as(hoisted["title"], hoisted)}
        return hoisted

    def is_partial(self, body: dict[str, Any], name: str) -> bool:
        """Whether a body's schema is its named schema with every field optional."""
        return "required" not in body and "required" in self.named.get(name, {})

    def link(self, name: str) -> str:
        return f"[{name}](#{schema_anchor(name)})"

    def section(self) -> str:
        """Every named schema, by name: its description and a table of its fields."""
        parts = ["## Schemas\n"]
        for name in sorted(self.named, key=str.lower):
            schema = self.named[name]
            parts.append(f'<a id="{schema_anchor(name)}"></a>\n\n### {name}\n')
            if schema.get("description"):
                parts.append(cell(schema["description"]) + "\n")
            parts.append(schema_table(schema, self.link) or _whole_value(schema, self.link))
        return "\n".join(parts)

    def _children_hoisted(self, schema: dict[str, Any]) -> dict[str, Any]:
        hoisted = dict(schema)
        for keyword in ("items", "additionalProperties", "propertyNames"):
            if isinstance(schema.get(keyword), dict):
                hoisted[keyword] = self.hoist(schema[keyword])
        for keyword in ("anyOf", "oneOf", "allOf"):
            if keyword in schema:
                hoisted[keyword] = [self.hoist(member) for member in schema[keyword]]
        if "properties" in schema:
            hoisted["properties"] = {
                name: self.hoist(value) for name, value in schema["properties"].items()
            }
        return hoisted

    def _named_as(self, title: str, schema: dict[str, Any]) -> str:
        """The name ``schema`` is shown under: its title, or its title and a number when
        another schema already has that title; the schema that says which fields are required
        is the one shown."""
        name, number = title, 1
        while name in self.named and _optional(self.named[name]) != _optional(schema):
            number += 1
            name = f"{title}{number}"
        if name not in self.named or "required" in schema:
            self.named[name] = schema
        return name


def _optional(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in schema.items() if key != "required"}


def _whole_value(schema: dict[str, Any], link: Callable[[str], str]) -> str:
    """A schema that is not an object of fields (a string of a few values), in a sentence."""
    text = "; ".join([type_of(schema, link), *rules(schema, link)])
    return text[:1].upper() + text[1:] + ".\n"


class Route:
    """One operation of the document, its request body's schemas hoisted into the index."""

    def __init__(
        self, method: str, path: str, operation: dict[str, Any], schemas: SchemaIndex
    ) -> None:
        self.method, self.path, self.operation, self.schemas = method, path, operation, schemas
        self.tag = (operation.get("tags") or ["other"])[0]
        content = (operation.get("requestBody") or {}).get("content", {})
        self.bodies = {
            kind: (schemas.hoist(item.get("schema", {})), item.get("schema", {}))
            for kind, item in content.items()
        }
        self.answers = {
            status: (answer, self._answer_body(status, answer))
            for status, answer in operation.get("responses", {}).items()
        }

    def markdown(self) -> str:
        """Its method, path and summary, a table of its parameters and body, its answers."""
        head = f"`{self.method.upper()} {self.path}`: {cell(self.operation.get('summary', ''))}\n"
        rows = [*self._parameter_rows(), *self._body_rows()]
        table = ""
        if rows:
            table = (
                "\n| parameter | in | type | required | rule and meaning |\n|---|---|---|---|---|\n"
            )
            table += "\n".join(rows) + "\n"
        return head + table + "\n" + self._answers() + "\n"

    def errors(self) -> Iterator[tuple[str, str, str]]:
        """Each error answer: its status, when it comes, its body."""
        for status, (answer, body) in self.answers.items():
            if int(status) >= 400:
                yield status, answer.get("description", ""), body

    def _parameter_rows(self) -> list[str]:
        rows = []
        for parameter in self.operation.get("parameters") or []:
            schema = parameter.get("schema", {})
            words = [f"default {code(json_text(schema['default']))}"] if "default" in schema else []
            words += rules(schema, self.schemas.link)
            if parameter.get("description"):
                words.append(cell(parameter["description"]))
            rows.append(
                f"| `{parameter['name']}` | {parameter['in']} | "
                f"{type_of(schema, self.schemas.link)} | "
                f"{'yes' if parameter.get('required') else 'no'} | {'; '.join(words)} |"
            )
        return rows

    def _body_rows(self) -> list[str]:
        required = "yes" if (self.operation.get("requestBody") or {}).get("required") else "no"
        rows = []
        for kind, (hoisted, original) in self.bodies.items():
            shape = type_of(hoisted, self.schemas.link)
            named = hoisted.get("$ref", "").removeprefix(SCHEMA_REF)
            if named and self.schemas.is_partial(original, named):
                shape += ", every field optional"
            rows.append(f"| body | {kind} | {shape} | {required} | |")
        return rows

    def _answers(self) -> str:
        """Each success with its body; the errors by body (what they mean is said once, in the
        section on errors)."""
        successes, failures = [], {}
        for status, (answer, body) in sorted(self.answers.items(), key=lambda item: int(item[0])):
            if int(status) >= 400:
                failures.setdefault(body, []).append(f"`{status}`")
                continue
            words = answer.get("description", "")
            said = f" ({cell(words)})" if words and words != FASTAPI_DEFAULT_ANSWER else ""
            successes.append(f"`{status}`{said}: {body}")
        text = "Answers " + "; ".join(successes)
        if failures:
            text += "; errors " + "; ".join(
                f"{', '.join(codes)}: {body}" for body, codes in failures.items()
            )
        return text + ".\n"

    def _answer_body(self, status: str, answer: dict[str, Any]) -> str:
        content = answer.get("content") or {}
        if not content:
            return "no body" if status == "204" else "not JSON"
        return ", ".join(
            type_of(self.schemas.hoist(item.get("schema", {})), self.schemas.link)
            if kind == "application/json"
            else code(kind)
            for kind, item in content.items()
        )


def _errors_section(routes: list[Route]) -> str:
    """What each error status means, once for every route that may answer it."""
    seen: dict[tuple[str, str, str], None] = {}
    for route in routes:
        for error in route.errors():
            seen.setdefault(error)
    rows = [f"| `{status}` | {cell(words)} | {body} |" for status, words, body in sorted(seen)]
    return (
        "## Errors\n\nThe error answers of the routes above, what each means and its body.\n\n"
        "| status | when | body |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    )
