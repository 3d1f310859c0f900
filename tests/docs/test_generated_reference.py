"""The reference pages' generated parts (docs/hooks/generated_reference.py) cover what they are
generated from: every command and option of ``octotrain``, every route of the REST API with
its body and answers, every schema of the OpenAPI document with every field. The settings'
part is held to ``config/defaults.toml`` by tests/test_configuration_reference.py."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from reference_parts.rest_api import openapi_document

from octotrain.settings import REPO_ROOT

Page = Callable[[str], str]
HEADING = re.compile(r"^### `(octotrain[^`]*)`$", re.MULTILINE)
SCHEMA_LINK = re.compile(r"\]\(#(schema-[^)]+)\)")
SCHEMA_ANCHOR = re.compile(r'<a id="(schema-[^"]+)"></a>')


def test_every_marker_of_the_docs_has_a_generator_and_every_generator_a_page(
    reference_hook: ModuleType,
) -> None:
    used = {
        match[1]
        for path in (REPO_ROOT / "docs").rglob("*.md")
        for match in reference_hook.MARKER.finditer(path.read_text(encoding="utf-8"))
    }
    assert used == set(reference_hook.GENERATORS)


def test_a_marker_without_a_generator_fails_the_build(reference_hook: ModuleType) -> None:
    with pytest.raises(ValueError, match="no generated part is called 'nothing'"):
        reference_hook.on_page_markdown("<!-- generated: nothing -->")


def _commands() -> Iterator[tuple[str, Any]]:
    """Every command of ``octotrain`` that ``--help`` shows, by its full name, walked here
    apart from the hook (its top level lists them without importing them)."""
    import typer

    from cli.lazy_commands import LAZY_COMMANDS
    from cli.main import app

    top = typer.main.get_command(app)
    context = top.context_class(top, info_name="octotrain")
    for name in top.list_commands(context):
        command = LAZY_COMMANDS[name].load() if name in LAZY_COMMANDS else None
        command = command or top.get_command(context, name)
        yield from _walk(command, f"octotrain {name}", context, name)


def _walk(command: Any, path: str, parent: Any, name: str) -> Iterator[tuple[str, Any]]:
    if command is None or command.hidden:
        return
    yield path, command
    context = command.context_class(command, info_name=name, parent=parent)
    for sub in getattr(command, "list_commands", lambda _: [])(context):
        yield from _walk(command.get_command(context, sub), f"{path} {sub}", context, sub)


def _sections(text: str, heading: re.Pattern[str]) -> dict[str, str]:
    """Each heading's name → the text up to the next heading."""
    found = list(heading.finditer(text))
    ends = [match.start() for match in found[1:]] + [len(text)]
    return {match[1]: text[match.end() : end] for match, end in zip(found, ends, strict=True)}


def test_every_command_has_a_reference_entry_with_every_option(reference_page: Page) -> None:
    sections = _sections(reference_page("cli.md"), HEADING)
    commands = dict(_commands())
    assert len(commands) > 20
    assert sorted(set(commands) - set(sections)) == []
    assert sorted(set(sections) - set(commands)) == [], "documented commands that do not exist"
    for path, command in commands.items():
        for option in command.params:
            if option.param_type_name != "option" or option.hidden or option.name == "help":
                continue
            for flag in option.opts:
                assert flag in sections[path], f"{path}: {flag} is not in its reference entry"


def _routes(page: str) -> dict[str, str]:
    """Each route's ``METHOD /path`` → its entry (up to the next route or heading)."""
    route = re.compile(r"^`([A-Z]+ /[^`]*)`: .*$|^#+ .*$", re.MULTILINE)
    found = list(route.finditer(page))
    ends = [match.start() for match in found[1:]] + [len(page)]
    return {
        match[1]: page[match.start() : end]
        for match, end in zip(found, ends, strict=True)
        if match[1]
    }


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    """The OpenAPI document the plugin serves, as the hook reads it."""
    return openapi_document()


def test_every_route_has_a_reference_entry(openapi: dict[str, Any], reference_page: Page) -> None:
    routes = _routes(reference_page("rest-api.md"))
    documented = {
        f"{method.upper()} {path}"
        for path, operations in openapi["paths"].items()
        for method in operations
    }
    assert len(documented) > 40
    assert sorted(documented - set(routes)) == []
    assert sorted(set(routes) - documented) == [], "documented routes that do not exist"


def _refs(node: Any) -> set[str]:
    """The component schemas a part of the document names."""
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if "$ref" in node else set()
        return found.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(item) for item in node))
    return set()


def test_every_route_links_the_schemas_of_its_body_and_its_answers(
    openapi: dict[str, Any], reference_page: Page
) -> None:
    routes = _routes(reference_page("rest-api.md"))
    for path, operations in openapi["paths"].items():
        for method, operation in operations.items():
            entry = routes[f"{method.upper()} {path}"]
            linked = set(SCHEMA_LINK.findall(entry))
            named = _refs(operation.get("responses", {})) | _refs(operation.get("requestBody"))
            for content in (operation.get("requestBody") or {}).get("content", {}).values():
                body = content["schema"]
                if "properties" in body:  # an inline document, shown by its title
                    named.add(body["title"])
            missing = {name for name in named if f"schema-{name}" not in linked}
            assert missing == set(), f"{method.upper()} {path} does not link {missing}"
            for code in operation.get("responses", {}):
                assert f"`{code}`" in entry, f"{method.upper()} {path}: answer {code}"


def test_a_change_s_body_is_its_document_with_every_field_optional(reference_page: Page) -> None:
    routes = _routes(reference_page("rest-api.md"))
    change = routes["PATCH /api/v1/tasks/{task_id}"]
    assert "[TaskSpec](#schema-TaskSpec), every field optional" in change
    assert "every field optional" not in routes["POST /api/v1/tasks"]


def _inline_documents(node: Any) -> Iterator[dict[str, Any]]:
    """The titled objects of the document's inline request bodies, nested ones included."""
    if isinstance(node, dict):
        if "properties" in node and "title" in node:
            yield node
        for value in node.values():
            yield from _inline_documents(value)
    elif isinstance(node, list):
        for item in node:
            yield from _inline_documents(item)


def test_every_schema_is_shown_once_with_every_field(
    openapi: dict[str, Any], reference_page: Page
) -> None:
    page = reference_page("rest-api.md")
    anchors = SCHEMA_ANCHOR.findall(page)
    assert len(anchors) == len(set(anchors)), "a schema shown twice"
    shown = _sections(page, re.compile(r'^<a id="schema-([^"]+)"></a>$', re.MULTILINE))
    schemas = dict(openapi["components"]["schemas"])
    for document in _inline_documents(openapi["paths"]):
        schemas.setdefault(document["title"], document)
    assert len(schemas) > 60
    assert sorted(set(schemas) - set(shown)) == []
    for name, schema in schemas.items():
        for field in schema.get("properties", {}):
            assert f"| `{field}` |" in shown[name], f"{name}.{field} is not shown"
        for value in schema.get("enum", []):
            assert f'`"{value}"`' in shown[name], f"{name}: {value} is not shown"


def test_every_link_to_a_schema_has_its_anchor(reference_page: Page) -> None:
    page = reference_page("rest-api.md")
    assert set(SCHEMA_LINK.findall(page)) <= set(SCHEMA_ANCHOR.findall(page))


def test_every_error_status_is_explained_once(
    openapi: dict[str, Any], reference_page: Page
) -> None:
    errors = _sections(reference_page("rest-api.md"), re.compile(r"^## (\w+)$", re.MULTILINE))
    statuses = {
        code
        for operations in openapi["paths"].values()
        for operation in operations.values()
        for code in operation.get("responses", {})
        if int(code) >= 400
    }
    for code in statuses:
        assert f"| `{code}` |" in errors["Errors"], code
