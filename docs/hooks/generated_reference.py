"""MkDocs hook: the reference pages' generated parts, from the code itself, at every build.

A page holds a marker where a generated part goes:

- ``<!-- generated: cli -->``: every ``octotrain`` command, from the typer app (``cli.main``):
  its usage line, its help, and each argument and option with its help and default;
- ``<!-- generated: rest-api -->``: every route of the REST API, from the OpenAPI document the
  plugin serves (``plugins.api.app``): method, path and summary, by tag, each parameter, its
  request body and its answers, linked to a "Schemas" section that shows every schema of the
  document once, field by field (the objects an inline request body describes by their title);
- ``<!-- generated: settings -->``: every key of ``config/defaults.toml``, the file the settings
  are read from: its environment variable, its default, the rule its value must meet
  (``octotrain.settings.Settings``) and the comment above it in the file;
- ``<!-- generated: metrics-json -->``: every key of a training's ``metrics.json``, from the
  fields of ``octotrain.metrics_meta.MetricsMeta`` and ``ChartMeta`` (the metadata of each says
  what the file holds there);
- ``<!-- generated: metric-definitions -->``: every field of an algorithm's metric definition,
  from the JSON schema of ``octotrain.metric_definitions.MetricDefinition``;
- ``<!-- generated: dag-params -->``: every Param of a task's DAG, as ``dags.run_params`` builds
  them for the example task ``EXAMPLE_TASK`` with the demo catalog's objects.

The concepts pages' generated parts, from the classes that spell a run's files:

- ``<!-- generated: log-files -->``: every log file of a node, from the properties of
  ``octotrain.contracts.NodeLogNames`` (their docstrings say what each holds);
- ``<!-- generated: run-objects -->``: every key of a run in the object store, from
  ``octotrain.run_layout.RunObjects`` (and the chart index beside it), and where model versions
  are;
- ``<!-- generated: run-folder -->``: the embedded default's state folder, from
  ``config/defaults.toml``, and a run's folder, from ``octotrain.run_layout.RunLayout``;
- ``<!-- generated: failure-classes -->``: every ``octotrain.failure_classes.FailureClass``,
  what ends a node with it and whether it is retried.
- ``<!-- generated: import-contracts -->``: what each top-level folder may import of the
  project, from the import-linter contracts of ``pyproject.toml``.

A property or method of those classes without a docstring fails the build: a file is never
documented by its name alone.

So a command, an option or a route added to the code is in the docs at the next build, and one
removed is gone: nothing here is copied by hand. A marker with no generator fails the build.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")
METHODS = ("get", "post", "put", "patch", "delete")


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Each marker of the page replaced by its generated part."""

    def generated(match: re.Match[str]) -> str:
        name = match[1]
        if name not in GENERATORS:
            raise ValueError(f"no generated part is called {name!r} (known: {sorted(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(generated, markdown)


def cli_reference() -> str:
    """Every command of ``octotrain``, depth first, in the order ``--help`` lists them."""
    import typer

    from cli.main import app

    top = typer.main.get_command(app)
    return "\n".join(_command_sections(top, top.context_class(top, info_name="octotrain")))


# Typer brings a click of its own: its commands, contexts and parameters are told apart by what
# they have, not by click's classes.
def _command_sections(command: Any, ctx: Any) -> Iterator[str]:
    path = ctx.command_path
    if ctx.parent is not None:  # the top level's help is the page's introduction
        yield f"### `{path}`\n"
        if command.help:
            yield _text(command.help) + "\n"
        pieces = " ".join(command.collect_usage_pieces(ctx))
        yield f"```\n{path} {pieces}\n```\n"
        rows = [_parameter_row(parameter, ctx) for parameter in command.get_params(ctx)]
        rows = [row for row in rows if row]
        if rows:
            yield "| argument or option | meaning |\n|---|---|"
            yield from rows
            yield ""
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = _loaded(name) if ctx.parent is None else command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                context = sub.context_class(sub, info_name=name, parent=ctx)
                yield from _command_sections(sub, context)


def _loaded(name: str) -> Any:
    """A top-level command as it runs (the top level lists them without importing them)."""
    from cli.lazy_commands import LAZY_COMMANDS

    return LAZY_COMMANDS[name].load()


def _parameter_row(parameter: Any, ctx: Any) -> str:
    if parameter.param_type_name == "option":
        if parameter.hidden or parameter.name in ("help", "install_completion", "show_completion"):
            return ""
        record = parameter.get_help_record(ctx)
        if record is None:
            return ""
        names, meaning = record
        return f"| `{_cell(names)}` | {_cell(meaning)} |"
    name = parameter.metavar or (parameter.name or "").upper()
    meaning = getattr(parameter, "help", None) or ("required" if parameter.required else "")
    return f"| `{_cell(name)}` | {_cell(meaning)} |"


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
    _private_airflow_home()
    from plugins.api.app import create_app

    return create_app().openapi()


def _private_airflow_home() -> None:
    """Airflow configured in a folder of its own, unless something already says where: the
    docs' build must not read or write a real installation's."""
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="octotrain-docs-airflow-"))


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
                parts.append(_cell(schema["description"]) + "\n")
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


SCHEMA_REF = "#/components/schemas/"
# What FastAPI says of an answer it was told nothing about: nothing worth repeating.
FASTAPI_DEFAULT_ANSWER = "Successful Response"


def _optional(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in schema.items() if key != "required"}


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
            code: (answer, self._answer_body(code, answer))
            for code, answer in operation.get("responses", {}).items()
        }

    def markdown(self) -> str:
        """Its method, path and summary, a table of its parameters and body, its answers."""
        head = f"`{self.method.upper()} {self.path}`: {_cell(self.operation.get('summary', ''))}\n"
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
        for code, (answer, body) in self.answers.items():
            if int(code) >= 400:
                yield code, answer.get("description", ""), body

    def _parameter_rows(self) -> list[str]:
        rows = []
        for parameter in self.operation.get("parameters") or []:
            schema = parameter.get("schema", {})
            words = [f"default {_code(_json(schema['default']))}"] if "default" in schema else []
            words += _rules(schema, self.schemas.link)
            if parameter.get("description"):
                words.append(_cell(parameter["description"]))
            rows.append(
                f"| `{parameter['name']}` | {parameter['in']} | "
                f"{_type_of(schema, self.schemas.link)} | "
                f"{'yes' if parameter.get('required') else 'no'} | {'; '.join(words)} |"
            )
        return rows

    def _body_rows(self) -> list[str]:
        required = "yes" if (self.operation.get("requestBody") or {}).get("required") else "no"
        rows = []
        for kind, (hoisted, original) in self.bodies.items():
            shape = _type_of(hoisted, self.schemas.link)
            named = hoisted.get("$ref", "").removeprefix(SCHEMA_REF)
            if named and self.schemas.is_partial(original, named):
                shape += ", every field optional"
            rows.append(f"| body | {kind} | {shape} | {required} | |")
        return rows

    def _answers(self) -> str:
        """Each success with its body; the errors by body (what they mean is said once, in the
        section on errors)."""
        successes, failures = [], {}
        for code, (answer, body) in sorted(self.answers.items(), key=lambda item: int(item[0])):
            if int(code) >= 400:
                failures.setdefault(body, []).append(f"`{code}`")
                continue
            words = answer.get("description", "")
            said = f" ({_cell(words)})" if words and words != FASTAPI_DEFAULT_ANSWER else ""
            successes.append(f"`{code}`{said}: {body}")
        text = "Answers " + "; ".join(successes)
        if failures:
            text += "; errors " + "; ".join(
                f"{', '.join(codes)}: {body}" for body, codes in failures.items()
            )
        return text + ".\n"

    def _answer_body(self, code: str, answer: dict[str, Any]) -> str:
        content = answer.get("content") or {}
        if not content:
            return "no body" if code == "204" else "not JSON"
        return ", ".join(
            _type_of(self.schemas.hoist(item.get("schema", {})), self.schemas.link)
            if kind == "application/json"
            else _code(kind)
            for kind, item in content.items()
        )


def _errors_section(routes: list[Route]) -> str:
    """What each error status means, once for every route that may answer it."""
    seen: dict[tuple[str, str, str], None] = {}
    for route in routes:
        for error in route.errors():
            seen.setdefault(error)
    rows = [f"| `{code}` | {_cell(words)} | {body} |" for code, words, body in sorted(seen)]
    return (
        "## Errors\n\nThe error answers of the routes above, what each means and its body.\n\n"
        "| status | when | body |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    )


def schema_table(schema: dict[str, Any], link: Callable[[str], str]) -> str:
    """An object schema's fields: name, type, whether required, default, rules and meaning;
    empty for a schema that is not an object of named fields."""
    properties = schema.get("properties")
    if not properties:
        return ""
    required = set(schema.get("required", []))
    rows = ["| field | type | required | rule and meaning |", "|---|---|---|---|"]
    for name, field in properties.items():
        words = [f"default {_code(_json(field['default']))}"] if "default" in field else []
        words += _rules(field, link)
        if field.get("description"):
            words.append(_cell(field["description"]))
        rows.append(
            f"| `{name}` | {_type_of(field, link)} | {'yes' if name in required else 'no'} | "
            f"{'; '.join(words)} |"
        )
    if schema.get("additionalProperties") is False:
        rows.append("| (any other) | | | refused |")
    return "\n".join(rows) + "\n"


def _whole_value(schema: dict[str, Any], link: Callable[[str], str]) -> str:
    """A schema that is not an object of fields (a string of a few values), in a sentence."""
    text = "; ".join([_type_of(schema, link), *_rules(schema, link)])
    return text[:1].upper() + text[1:] + ".\n"


def _type_of(schema: dict[str, Any], link: Callable[[str], str]) -> str:
    """A schema's type in words: ``integer or null``, ``list of [RunView](#…)``."""
    if "$ref" in schema:
        return link(schema["$ref"].rsplit("/", 1)[-1])
    for keyword in ("anyOf", "oneOf", "allOf"):
        if keyword in schema:
            kinds = [_type_of(member, link) for member in schema[keyword]]
            return " or ".join(dict.fromkeys(kinds))
    kinds = schema.get("type")
    if kinds is None:
        return "any" if "enum" not in schema else "one of its values"
    if isinstance(kinds, list):
        return " or ".join(_kind(kind, schema, link) for kind in kinds)
    return _kind(kinds, schema, link)


def _kind(kind: str, schema: dict[str, Any], link: Callable[[str], str]) -> str:
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"list of {_grouped(_type_of(schema['items'], link))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object (key → {_type_of(schema['additionalProperties'], link)})"
    if kind == "string" and "format" in schema:
        return f"string ({schema['format']})"
    return kind


def _grouped(kind: str) -> str:
    """``list of (number or null)``, not the ``list of number or null`` that reads as two."""
    return f"({kind})" if " or " in kind else kind


def _rules(schema: dict[str, Any], link: Callable[[str], str]) -> list[str]:
    """What a value must be beyond its type, in words, from the schema's keywords."""
    words = []
    if "enum" in schema:
        words.append("one of " + ", ".join(_code(_json(value)) for value in schema["enum"]))
    words += _range(schema, "minimum", "maximum", "")
    if "exclusiveMinimum" in schema:
        words.append(f"above {_number(schema['exclusiveMinimum'])}")
    words += _range(schema, "minLength", "maxLength", " characters")
    words += _range(schema, "minItems", "maxItems", " items")
    words += _range(schema, "minProperties", "maxProperties", " keys")
    if "pattern" in schema:
        words.append(f"matches {_code(schema['pattern'])}")
    if "contentMediaType" in schema:
        words.append(f"a file ({_code(schema['contentMediaType'])})")
    for keyword, label in (
        ("items", "each item"),
        ("additionalProperties", "each value"),
        ("propertyNames", "each key"),
    ):
        if isinstance(schema.get(keyword), dict) and (inner := _rules(schema[keyword], link)):
            words.append(f"{label}: {', '.join(inner)}")
    for member in schema.get("anyOf", []) + schema.get("oneOf", []):
        words += _rules(member, link)
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
    said = [_type_of(field, link)]
    if name in parent.get("required", []):
        said.append("required")
    return f"`{name}` ({', '.join(said + _rules(field, link))})"


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


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _code(text: str) -> str:
    """``text`` as a code span, whatever backticks it holds (pipes stay: a table's cell
    ends at a pipe outside a code span only)."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def settings_reference() -> str:
    """Every key of ``config/defaults.toml``, in its order, with what the file says of it."""
    import tomllib

    from octotrain.settings import DEFAULTS_FILE, ENV_PREFIX, Settings

    text = DEFAULTS_FILE.read_text(encoding="utf-8")
    defaults = tomllib.loads(text)
    rows = ["| variable | default | rule | meaning |", "|---|---|---|---|"]
    for key, comment in _commented_keys(text):
        value = defaults[key]
        shown = "(empty)" if value == "" else f"`{value}`"
        rule = _rule(Settings.model_fields[key])
        rows.append(f"| `{ENV_PREFIX}{key.upper()}` | {shown} | {rule} | {_cell(comment)} |")
    return "\n".join(rows) + "\n"


def _commented_keys(text: str) -> Iterator[tuple[str, str]]:
    """Each ``key = value`` line's key with the comment block above it (a block stays with the
    keys that follow it until a blank line)."""
    comment: list[str] = []
    keys_seen = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            comment, keys_seen = [], False
        elif stripped.startswith("#"):
            if keys_seen:  # a new block inside a group of keys
                comment, keys_seen = [], False
            comment.append(stripped.lstrip("#").strip())
        elif "=" in stripped:
            keys_seen = True
            yield stripped.split("=", 1)[0].strip(), " ".join(comment)


def _rule(field: Any) -> str:
    """What a setting's value must be, from its field in ``Settings``."""
    import typing

    words = []
    choices = typing.get_args(field.annotation)
    if typing.get_origin(field.annotation) is typing.Literal:
        words.append("one of " + ", ".join(f"`{choice}`" for choice in choices))
    else:
        words.append(getattr(field.annotation, "__name__", str(field.annotation)))
    for bound in field.metadata:
        for attribute, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤"),
                                ("min_length", "length ≥"), ("pattern", "matches")):  # fmt: skip
            value = getattr(bound, attribute, None)
            if value is not None:
                words.append(f"{sign} `{value}`" if attribute == "pattern" else f"{sign} {value}")
    return _cell(", ".join(words))


def metrics_json_reference() -> str:
    """Every key of ``metrics.json``: the file's, then a chart's (an item of ``metas``)."""
    from octotrain.metrics_meta import ChartMeta, MetricsMeta

    return (
        "The file is a JSON object:\n\n" + file_keys_table(MetricsMeta) + "\n"
        f'<a id="{CHART_ANCHOR}"></a>Each chart of `metas` is a JSON object:\n\n'
        + file_keys_table(ChartMeta)
    )


CHART_ANCHOR = "metrics-json-chart"


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
        shown = ("none" if default is None else _code(_json(default))) if optional else ""
        rows.append(
            f"| `{key}` | {_file_type(hints[field.name])} | {'no' if optional else 'yes'} | "
            f"{shown} | {_cell(field.metadata['description'])} |"
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
        spelled = [_code(_json(flag)) for flag in FLAGS if isinstance(flag, str)]
        return "boolean, or " + " or ".join(spelled)
    return {str: "string", float: "number", int: "integer"}.get(annotation, str(annotation))


def metric_definitions_reference() -> str:
    """Every field of a metric definition, as an algorithm document declares one."""
    from octotrain.catalog.documents import AlgorithmDocument
    from octotrain.metric_definitions import MetricDefinition

    field = AlgorithmDocument.model_fields["metric_definitions"]
    return (
        f"An algorithm document's `metric_definitions`: {_cell(field.description or '')}. "
        "Each is an object:\n\n" + schema_table(MetricDefinition.model_json_schema(), str)
    )


# The task whose DAG's Params are shown, and the catalog its algorithm and spec are from.
EXAMPLE_TASK = "examples/tasks/incremental.yaml"
EXAMPLE_CATALOG = "examples/demo/catalog.yaml"


def dag_params_reference() -> str:
    """Every Param of the example task's DAG, then how a secret's Param looks."""
    from dags.run_params import secret_schema
    from octotrain.secrets import MASK, SENSITIVE_WORDS

    task, params = task_params(EXAMPLE_TASK)
    rows = [
        "| Param | type | default (this task) | rule | meaning | Trigger form |",
        "|---|---|---|---|---|---|",
    ]
    for name, param in params.items():
        schema = param.schema
        rows.append(
            f"| `{name}` | {_type_of(schema, str)} | {_code(_json(param.value))} | "
            f"{'; '.join(_rules(schema, str))} | {_cell(param.description or '')} | "
            f"{_cell(schema.get('title', ''))}, in {_cell(schema.get('section', ''))} |"
        )
    secret = secret_schema()
    words = ", ".join(_code(word) for word in SENSITIVE_WORDS)
    values = " and ".join(_code(_json(value)) for value in secret["enum"])
    return (
        f"The DAG of the task of `{EXAMPLE_TASK}` ({_code(task.name)}), with its algorithm and "
        f"resource spec from `{EXAMPLE_CATALOG}`:\n\n" + "\n".join(rows) + "\n\n"
        f"A parameter or variable whose name contains one of {words} is a secret: its Param's "
        f"default is {_code(MASK)}, its only values {values}; {_cell(secret['description'])}.\n"
    )


def task_params(task_file: str) -> tuple[Any, dict[str, Any]]:
    """The task of ``task_file`` (in the repository) and its DAG's Params, as the DAG factory
    builds them (``dags.run_params.run_params``) from the catalog's rows: here rows made from
    ``EXAMPLE_CATALOG``'s documents as the catalog makes them, never stored."""
    import yaml

    _private_airflow_home()
    from dags.run_params import run_params
    from octotrain.catalog.documents import (
        AlgorithmDocument,
        ProjectDocument,
        ResourceSpecDocument,
    )
    from octotrain.catalog.models import Algorithm, Project, ResourceSpec, TrainingTask
    from octotrain.settings import REPO_ROOT
    from octotrain.task_spec import TaskSpec

    catalog = yaml.safe_load((REPO_ROOT / EXAMPLE_CATALOG).read_text(encoding="utf-8"))
    document = TaskSpec.model_validate(
        yaml.safe_load((REPO_ROOT / task_file).read_text(encoding="utf-8"))
    )
    project = Project(**_columns(ProjectDocument, catalog["project"]))
    spec_document = _named(catalog["resource_specs"], document.resource_spec)
    spec = ResourceSpec(project=project, **_columns(ResourceSpecDocument, spec_document))
    algorithm_document = _named(catalog["algorithms"], document.algorithm)
    algorithm = Algorithm(project=project, **_columns(AlgorithmDocument, algorithm_document))
    task = TrainingTask(project=project, name=document.name, spec=document.stored())
    return task, run_params(task, task.document, algorithm, spec)


def _columns(model: Any, document: dict[str, Any]) -> dict[str, Any]:
    """A catalog document's column values, as the catalog stores a valid one."""
    return model.model_validate(document).model_dump(mode="json", exclude_none=True)


def _named(documents: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(document for document in documents if document["name"] == name)


# The concepts pages' generated parts: a run's files, named by the code that spells them,
# each with its docstring. Placeholders stand for what differs from run to run.
SAMPLE_TASK_ID = 7
SAMPLE_RUN_ID = "manual__2026-12-03T14:26:09.123456+00:00"
SAMPLE_NODE = "distributed-1"
PLACEHOLDERS = {"name": "<file>", "attempt": "<n>"}


def log_files_reference() -> str:
    """Every log file of a node (``NodeLogNames``): its kind, its name, whether every node
    writes it, and what it holds; where the files are, in the run folder and the store."""
    from octotrain.contracts import NodeLogNames
    from octotrain.run_layout import RunLayout, RunObjects

    names = NodeLogNames(task_id=_placeholder("task_id"), node_index=_placeholder("node_index"))
    sample = NodeLogNames(task_id=SAMPLE_TASK_ID, node_index=SAMPLE_NODE)
    kinds = {file: kind for kind, file in names.by_kind().items()}
    always = set(names.always())
    rows = [
        "| kind | file | written | what it holds |",
        "|---|---|---|---|",
    ]
    for name, member in documented_members(NodeLogNames, "str"):
        file = _evaluated(names, name, member)
        written = "by every node" if file in always else "only when needed (below)"
        rows.append(f"| `{kinds.get(file, '')}` | `{file}` | {written} | {_doc(member)} |")
    layout = RunLayout(**_placeholders("runs_dir", "task_id", "run_key"))
    objects = RunObjects(**_placeholders("task_id", "run_key"))
    return (
        "\n".join(rows) + "\n\n"
        f"So node `{SAMPLE_NODE}` of task {SAMPLE_TASK_ID} writes `{sample.train}`, "
        f"`{sample.init}`, `{sample.sidecar}` and, when needed, `{sample.supplemental}`. "
        f"They are written to the run folder, `{layout.log_path('<file>')}` "
        "(`RunLayout.log_path`; a pod's own folder on Kubernetes), and kept in the object "
        f"store, `{objects.log('<file>')}` (`RunObjects.log`).\n"
    )


def run_objects_reference() -> str:
    """Every key of a run in the object store (``RunObjects``, the chart index beside them),
    then where dataset versions and model versions are."""
    from octotrain import run_layout
    from octotrain.catalog.dataset_versions import dataset_version_prefix
    from octotrain.chart_series_index import index_key
    from octotrain.planning import run_key
    from octotrain.run_layout import RunObjects

    objects = RunObjects(**_placeholders("task_id", "run_key"))
    rows = ["| key | in the code | what it holds |", "|---|---|---|"]
    for name, member in documented_members(RunObjects, "str"):
        key = _evaluated(objects, name, member)
        rows.append(f"| `{key}` | `RunObjects.{name}` | {_doc(member)} |")
    chart_index = index_key(objects, "<node index>", "<chart>")
    rows.append(f"| `{chart_index}` | `chart_series_index.index_key` | {_doc(index_key)} |")
    models = ["| prefix | in the code | what it holds |", "|---|---|---|"]
    for module, function in (
        ("dataset_versions", dataset_version_prefix),
        ("run_layout", run_layout.model_run_prefix),
        ("run_layout", run_layout.model_import_prefix),
    ):
        prefix = function(*_placeholders(*_parameters(function)).values())
        models.append(f"| `{prefix}/` | `{module}.{function.__name__}` | {_doc(function)} |")
    sample = RunObjects(SAMPLE_TASK_ID, run_key(SAMPLE_RUN_ID))
    return (
        "\n".join(rows) + "\n\n"
        f"`<run key>` is the Airflow run id made safe for a folder's name or a key, and unique "
        f"(`planning.run_key`): run `{SAMPLE_RUN_ID}` of task {SAMPLE_TASK_ID} has the prefix "
        f"`{sample.prefix}`.\n\n"
        "Dataset versions and model versions are under their dataset or repository, not under "
        "a run:\n\n" + "\n".join(models) + "\n"
    )


def run_folder_reference() -> str:
    """The embedded default's state folder (the settings whose default is under it, and
    Airflow's home), then a run's folder (``RunLayout`` and the files of the local launcher's
    run-wide flags)."""
    import tomllib
    from types import SimpleNamespace

    from cli.airflow_env import airflow_home
    from hooks.local_process import RunAbortMarker
    from hooks.run_restarts import LocalRunRestarts
    from octotrain.contracts import PLATFORM_ENV_NAMES, NodeFolders
    from octotrain.run_layout import RunLayout
    from octotrain.settings import DEFAULTS_FILE, ENV_PREFIX

    text = DEFAULTS_FILE.read_text(encoding="utf-8")
    defaults = tomllib.loads(text)
    state = ["| path | setting | what it holds |", "|---|---|---|"]
    for key, comment in _commented_keys(text):
        value = defaults[key]
        if isinstance(value, str) and STATE_DIR in value:
            path = value.split(STATE_DIR, 1)[1].lstrip("/")
            state.append(f"| `{path}` | `{ENV_PREFIX}{key.upper()}` | {_prose_cell(comment)} |")
    home = airflow_home(_any(SimpleNamespace(state_dir=Path())))
    state.append(
        f"| `{home}` | | Airflow's home (`AIRFLOW_HOME`, `cli.airflow_env.airflow_home`): its "
        "configuration, its metadata DB, its task logs, the admin's generated password |"
    )

    layout = RunLayout(**_placeholders("runs_dir", "task_id", "run_key"))
    run_dir = layout.run_dir
    rows = ["| path in the run folder | in the code | what it holds |", "|---|---|---|"]

    def row(path: Path, code: str, meaning: str, *, folder: bool = False) -> None:
        shown = path.relative_to(run_dir).as_posix() + ("/" if folder else "")
        rows.append(f"| `{shown}` | `{code}` | {meaning} |")

    for name, member in documented_members(RunLayout, "Path", "NodeFolders"):
        found = _evaluated(layout, name, member)
        if found == run_dir:  # the folder itself, named above the table
            continue
        if isinstance(found, NodeFolders):
            for field in dataclasses.fields(NodeFolders):
                variable = field.name.upper()
                if variable not in PLATFORM_ENV_NAMES:
                    raise ValueError(f"NodeFolders.{field.name} is no variable of the contract")
                row(getattr(found, field.name), f"RunLayout.{name}",
                    f"the node's `{variable}` (the environment contract)", folder=True)  # fmt: skip
        else:
            row(found, f"RunLayout.{name}", _doc(member), folder=name.endswith("_dir"))
    row(RunAbortMarker(run_dir).path, "local_process.RunAbortMarker", _doc(RunAbortMarker))
    restarts = LocalRunRestarts(run_dir).folder
    row(restarts, "run_restarts.LocalRunRestarts", _doc(LocalRunRestarts), folder=True)
    return (
        "\n".join(state) + "\n\n"
        f"Each run has its folder, `{run_dir}` (`RunLayout.run_dir`, `runs_dir` above), on the "
        "machine that runs its nodes:\n\n" + "\n".join(rows) + "\n"
    )


STATE_DIR = "{state_dir}"


def failure_classes_reference() -> str:
    """Every failure class: what ends a node with it, whether it is retried and whether that
    counts against ``max_node_restarts``, and its words in the supplemental log."""
    from octotrain.failure_classes import FailureClass
    from octotrain.restarts import (
        CLASS_LINE,
        DEFAULT_MAX_NODE_RESTARTS,
        MAX_NODE_RESTARTS,
        MAX_RUN_RESTARTS,
        what_was_done,
    )

    rows = [
        "| class | what ends the node | retried | in words |",
        "|---|---|---|---|",
    ]
    for failure in FailureClass:
        if not failure.retried:
            retried = "no"
        elif failure.counted:
            retried = "yes, counted against `max_node_restarts`"
        else:
            retried = "yes, not counted against `max_node_restarts`"
        causes, words = _prose_cell(failure.causes()), _prose_cell(failure.in_words())
        rows.append(f"| `{failure}` | {causes} | {retried} | {words} |")
    example = what_was_done(FailureClass.LOST, attempt=0, max_restarts=DEFAULT_MAX_NODE_RESTARTS)
    return (
        "\n".join(rows) + "\n\n"
        f"The supplemental log's line reads `{CLASS_LINE}<class>: <in words>` and what was "
        f"done (`{example}`). A task's `max_node_restarts` is 0 to {MAX_NODE_RESTARTS} "
        f"({DEFAULT_MAX_NODE_RESTARTS} when absent); a run is restarted at most "
        f"{MAX_RUN_RESTARTS} times in all, preemptions included.\n"
    )


def import_contracts_reference() -> str:
    """What each top-level folder may import of the project, from the import-linter contracts
    of ``pyproject.toml`` (``lint-imports`` holds the code to them): a contract added, changed
    or removed there is so here at the next build."""
    import tomllib

    from octotrain.settings import REPO_ROOT

    linter = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "importlinter"
    ]
    roots: list[str] = linter["root_packages"]
    forbidden = import_bans(linter["contracts"])
    rows = ["| folder | may import | may not import | contract |", "|---|---|---|---|"]
    for root in roots:
        bans = forbidden.get(root, {})
        allowed = [other for other in roots if other != root and other not in bans]
        rows.append(
            f"| `{root}/` | {', '.join(f'`{name}`' for name in allowed) or 'nothing'} | "
            f"{', '.join(f'`{name}`' for name in bans) or 'nothing'} | "
            f"{'; '.join(_cell(name) for name in dict.fromkeys(bans.values()))} |"
        )
    return "\n".join(rows) + "\n"


def import_bans(contracts: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """For each module a contract binds, the modules it may not import, each with the name of
    the contract that says so. A kind of contract not read here fails the build rather than
    leave a rule out of the docs."""
    bans: dict[str, dict[str, str]] = {}
    for contract in contracts:
        if contract["type"] == "forbidden":
            pairs = [
                (source, module)
                for source in contract["source_modules"]
                for module in contract["forbidden_modules"]
            ]
        elif contract["type"] == "layers":  # a layer may not import the layers above it
            layers = contract["layers"]
            pairs = [(low, high) for index, low in enumerate(layers) for high in layers[:index]]
        else:
            raise ValueError(f"import contracts of type {contract['type']!r} are not shown")
        for source, module in pairs:
            bans.setdefault(source, {}).setdefault(module, contract["name"])
    return bans


def documented_members(cls: type, *returns: str) -> Iterator[tuple[str, Any]]:
    """The public properties and methods of ``cls`` whose return annotation is one of
    ``returns`` (as written: the modules postpone annotations), in the order the class defines
    them. One without a docstring fails the build: the docs would name a file without saying
    what it holds."""
    for name, member in vars(cls).items():
        if name.startswith("_") or isinstance(member, classmethod | staticmethod):
            continue
        function = member.fget if isinstance(member, property) else member
        if not callable(function) or function.__annotations__.get("return") not in returns:
            continue
        if not inspect.getdoc(function):
            raise ValueError(f"{cls.__name__}.{name} has no docstring: say what it holds")
        yield name, member


def _evaluated(instance: Any, name: str, member: Any) -> Any:
    """A property's value, or a method's for a placeholder of each of its arguments."""
    if isinstance(member, property):
        return getattr(instance, name)
    return getattr(instance, name)(*_placeholders(*_parameters(member)[1:]).values())


def _parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def _placeholders(*names: str) -> dict[str, Any]:
    """A placeholder for each argument name: ``<node index>``, ``<task id>``, or a name of
    ``PLACEHOLDERS``; typed Any, as it stands in for a number too (``task_id``)."""
    return {name: _placeholder(name) for name in names}


def _placeholder(name: str) -> Any:
    """A folder's setting (``runs_dir``) stands as a path under its own name."""
    if name.endswith("_dir"):
        return PurePosixPath(f"<{name}>")
    return PLACEHOLDERS.get(name, f"<{name.replace('_', ' ')}>")


def _any(value: object) -> Any:
    """``value`` where an object of another type is expected, of which only the attributes
    ``value`` has are read."""
    return value


def _doc(member: Any) -> str:
    """A member's docstring as a table cell, its ``code`` in Markdown's backticks."""
    function = member.fget if isinstance(member, property) else member
    return _prose_cell((inspect.getdoc(function) or "").replace("``", "`"))


def _prose_cell(text: str) -> str:
    """Text that stays inside one table cell, a ``<placeholder>`` outside code spans shown as
    written (Markdown would pass it on as an HTML tag, which the browser hides)."""
    pieces = re.split(r"(`+[^`]*`+)", _cell(text))
    return "".join(
        piece if piece.startswith("`") else piece.replace("<", "&lt;") for piece in pieces
    )


def _text(text: str) -> str:
    """A command's help as Markdown: its paragraphs, typer's ``\\b`` marks left out."""
    return "\n".join(line for line in text.strip().splitlines() if line.strip() != "\b")


def _cell(text: str) -> str:
    """Text that stays inside one table cell."""
    return " ".join(text.split()).replace("|", "\\|")


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "rest-api": rest_api_reference,
    "settings": settings_reference,
    "metrics-json": metrics_json_reference,
    "metric-definitions": metric_definitions_reference,
    "dag-params": dag_params_reference,
    "log-files": log_files_reference,
    "run-objects": run_objects_reference,
    "run-folder": run_folder_reference,
    "failure-classes": failure_classes_reference,
    "import-contracts": import_contracts_reference,
}
