"""MkDocs hook: the reference pages' generated parts, from the code itself, at every build.

A page holds a marker where a generated part goes:

- ``<!-- generated: cli -->``: every ``octotrain`` command, from the typer app (``cli.main``):
  its usage line, its help, and each argument and option with its help and default;
- ``<!-- generated: rest-api -->``: every route of the REST API, from the OpenAPI document the
  plugin serves (``plugins.api.app``): method, path and summary, by tag, and each parameter;
- ``<!-- generated: settings -->``: every key of ``config/defaults.toml``, the file the settings
  are read from: its environment variable, its default, the rule its value must meet
  (``octotrain.settings.Settings``) and the comment above it in the file.

So a command, an option or a route added to the code is in the docs at the next build, and one
removed is gone: nothing here is copied by hand. A marker with no generator fails the build.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterator
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
    """Every route of the OpenAPI document, by tag, with its parameters."""
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="octotrain-docs-airflow-"))
    from plugins.api.app import create_app

    document = create_app().openapi()
    by_tag: dict[str, list[str]] = {}
    for path, operations in document["paths"].items():
        for method in METHODS:
            operation = operations.get(method)
            if operation is None:
                continue
            tag = (operation.get("tags") or ["other"])[0]
            by_tag.setdefault(tag, []).append(_route(method, path, operation))
    lines = []
    for tag in sorted(by_tag):
        lines += [f"### {tag}\n", *by_tag[tag]]
    return "\n".join(lines)


def _route(method: str, path: str, operation: dict[str, Any]) -> str:
    head = f"`{method.upper()} {path}`: {_cell(operation.get('summary', ''))}\n"
    parameters = [
        f"| `{p['name']}` | {p['in']} | {'yes' if p.get('required') else 'no'} | "
        f"{_cell(p.get('description', ''))} |"
        for p in operation.get("parameters") or []
    ]
    if "requestBody" in operation:
        content = ", ".join(operation["requestBody"].get("content", {}))
        parameters.append(f"| body | {content} | yes | |")
    if not parameters:
        return head
    table = "| parameter | in | required | meaning |\n|---|---|---|---|\n"
    return head + "\n" + table + "\n".join(parameters) + "\n"


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
}
