"""The ``cli`` part (docs/reference/cli.md): every ``octotrain`` command, from the typer app
(``cli.main``): its usage line, its help, and each argument and option with its help and
default."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .markdown import cell


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
        return f"| `{cell(names)}` | {cell(meaning)} |"
    name = parameter.metavar or (parameter.name or "").upper()
    meaning = getattr(parameter, "help", None) or ("required" if parameter.required else "")
    return f"| `{cell(name)}` | {cell(meaning)} |"


def _text(text: str) -> str:
    """A command's help as Markdown: its paragraphs, typer's ``\\b`` marks left out."""
    return "\n".join(line for line in text.strip().splitlines() if line.strip() != "\b")
