"""The ``octotrain`` command's top level, whose command groups are imported only when one of
them runs: ``octotrain --help`` and ``octotrain up`` need none of the catalog's code, and a
command imports only its own group (SQLAlchemy, the catalog models, Airflow's client). Each
group's one-line help is written here, where the top-level help reads it without importing the
group; the group's module uses the same words for its own help (``help_of``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import click
import typer
from typer.core import TyperGroup


@dataclass(frozen=True)
class LazyCommand:
    """A command group (a ``typer.Typer``) or command (a function) in ``module``'s ``attribute``."""

    module: str
    attribute: str
    help: str

    def load(self) -> click.Command:
        found = getattr(importlib.import_module(self.module), self.attribute)
        if isinstance(found, typer.Typer):
            return typer.main.get_group(found)  # the top level has the completion options
        single = typer.Typer(add_completion=False)
        single.command(help=self.help)(found)
        return typer.main.get_command(single)


LAZY_COMMANDS = {
    "init": LazyCommand(
        "cli.setup_commands",
        "init",
        "Create or upgrade the catalog schema (and record the checksums of files stored before "
        "checksums were kept).",
    ),
    "up": LazyCommand(
        "cli.setup_commands",
        "up",
        "Start the embedded default, run the demo task, and keep Airflow running until Ctrl-C.",
    ),
    "demo": LazyCommand("cli.setup_commands", "demo_app", "The demo project."),
    "usage": LazyCommand(
        "cli.usage_commands",
        "usage",
        "Node-, CPU- and GPU-hours, queued and training time (hours), a run across months split "
        "by time: of a project in a month, of a task's runs, or of one run.",
    ),
    "project": LazyCommand("cli.catalog_commands", "projects_app", "Projects and their members."),
    "resource-spec": LazyCommand(
        "cli.catalog_commands", "resource_specs_app", "The resource specs of a project."
    ),
    "algorithm": LazyCommand(
        "cli.catalog_commands", "algorithms_app", "The algorithms of a project."
    ),
    "dataset": LazyCommand("cli.catalog_commands", "datasets_app", "The datasets of a project."),
    "cache": LazyCommand(
        "cli.catalog_commands", "caches_app", "Data caches: pre-staged copies of dataset versions."
    ),
    "model-repository": LazyCommand(
        "cli.catalog_commands", "repositories_app", "The model repositories of a project."
    ),
    "task": LazyCommand("cli.task_commands", "tasks_app", "Training tasks."),
    "sweep": LazyCommand(
        "cli.sweep_commands",
        "sweeps_app",
        "Hyper-parameter sweeps of a task: many runs, searched and pruned with Optuna.",
    ),
    "node": LazyCommand(
        "cli.node_commands", "nodes_app", "What runs inside a training pod beside the training."
    ),
}


def help_of(name: str) -> str:
    """The one-line help of the lazy command ``name``, for its own module's Typer."""
    return LAZY_COMMANDS[name].help


class _Deferred(click.Command):
    """What the top-level help lists for a lazy command; running it loads the real one, whose
    context then runs it (click runs ``sub_context.command``)."""

    def __init__(self, name: str, lazy: LazyCommand) -> None:
        super().__init__(name, help=lazy.help)
        self.lazy = lazy

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None,
                     **extra: Any) -> click.Context:  # fmt: skip
        return self.lazy.load().make_context(info_name, args, parent=parent, **extra)


class LazyGroup(TyperGroup):
    """The top-level group: its own commands, then the lazy ones in ``LAZY_COMMANDS`` order."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *LAZY_COMMANDS]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS:
            return _Deferred(cmd_name, LAZY_COMMANDS[cmd_name])
        return super().get_command(ctx, cmd_name)
