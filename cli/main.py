"""The ``octotrain`` command line: catalog and task management over the same services as the
REST API, the demo, and the embedded default's launcher. Every command is imported only when it
runs (``cli.lazy_commands``): the top level itself imports typer alone."""

from __future__ import annotations

import typer

from cli.lazy_commands import LazyGroup

app = typer.Typer(
    cls=LazyGroup, help="Octotrain: training tasks on Apache Airflow.", no_args_is_help=True
)


@app.callback()
def octotrain() -> None:
    """The top level: every command is one of ``cli.lazy_commands.LAZY_COMMANDS``."""
