"""``octotrain init``, ``octotrain demo seed`` and ``octotrain up``: the catalog's schema, the
demo project, and the embedded default."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cli.demo import seed_demo
from cli.lazy_commands import help_of
from cli.output import reported
from hooks.storage.catalog import CatalogHook
from hooks.storage.object_store import object_store_from_url
from octotrain.catalog.backfill import backfill_manifests
from octotrain.settings import get_settings

demo_app = typer.Typer(help=help_of("demo"), no_args_is_help=True)


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
