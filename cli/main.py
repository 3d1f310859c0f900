"""The ``octotrain`` command line: catalog and task management over the same services as the
REST API, the demo, and the embedded default's launcher."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cli.catalog_commands import (
    algorithms_app,
    caches_app,
    datasets_app,
    projects_app,
    repositories_app,
    resource_specs_app,
)
from cli.demo import seed_demo
from cli.log_commands import task_logs
from cli.node_commands import nodes_app
from cli.output import reported
from cli.task_commands import tasks_app
from cli.usage_commands import usage
from hooks.catalog import CatalogHook
from hooks.object_store import object_store_from_url
from octotrain.catalog.backfill import backfill_manifests
from octotrain.settings import get_settings

app = typer.Typer(help="Octotrain: training tasks on Apache Airflow.", no_args_is_help=True)
demo_app = typer.Typer(help="The demo project.", no_args_is_help=True)
app.add_typer(demo_app, name="demo")
app.add_typer(projects_app, name="project")
app.add_typer(resource_specs_app, name="resource-spec")
app.add_typer(algorithms_app, name="algorithm")
app.add_typer(datasets_app, name="dataset")
app.add_typer(caches_app, name="cache")
app.add_typer(repositories_app, name="model-repository")
tasks_app.command("logs", help="A run's log files: list, print, follow (-f), search (--grep).")(
    task_logs
)
app.add_typer(tasks_app, name="task")
app.add_typer(nodes_app, name="node")
app.command("usage")(usage)


@app.command("init")
def init() -> None:
    """Create or upgrade the catalog schema (and record the checksums of files stored before
    checksums were kept)."""
    settings = get_settings()
    catalog = CatalogHook(settings.catalog_url)
    catalog.migrate()
    with reported(), catalog.session() as session:
        recorded = backfill_manifests(session, object_store_from_url(settings.object_store_url))
    for prefix in recorded:
        typer.echo(f"recorded the checksums of {prefix}/")
    typer.echo(f"catalog at {settings.catalog_url} is up to date")


@demo_app.command("seed")
def demo_seed() -> None:
    """Seed the demo project (idempotent: existing objects are reused)."""
    settings = get_settings()
    catalog = CatalogHook(settings.catalog_url)
    catalog.migrate()
    with reported():
        seed = seed_demo(catalog, object_store_from_url(settings.object_store_url))
    typer.echo(json.dumps(seed.__dict__, ensure_ascii=False))


@app.command("up")
def up(
    port: Annotated[int, typer.Option(help="Port of Airflow's api-server and UI.")] = 8080,
) -> None:
    """Start the embedded default, run the demo task, and keep Airflow running until Ctrl-C."""
    from cli.embedded import EmbeddedError, bring_up

    try:
        code = bring_up(get_settings(), port=port, echo=typer.echo)
    except EmbeddedError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(code)
