"""What every ``octotrain`` command works with: a catalog session, the object store, and the
command's identity. The command holds the catalog's credentials itself (like ``airflow``'s own
CLI holds the metadata DB's), so it acts as an administrator of every project, under the name of
the Airflow user it triggers runs as (``OCTOTRAIN_AIRFLOW_USERNAME``): a stop, an import and a
trigger from the command line are recorded as that user, as Airflow records the trigger."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session

from hooks.storage.catalog import CatalogHook
from octotrain.catalog.access import Scope
from octotrain.settings import get_settings


def cli_scope() -> Scope:
    return Scope.administrator(get_settings().airflow_username)


@contextmanager
def catalog_session() -> Iterator[Session]:
    """One transaction: committed if the command succeeds, rolled back otherwise."""
    hook = CatalogHook(get_settings().catalog_url)
    try:
        with hook.session() as session:
            yield session
    finally:
        hook.dispose()
