"""Datasets as Airflow Assets: a task that retrains on a dataset is scheduled on the dataset's
Asset, and publishing a version of the dataset emits an event of that Asset, which starts a run
of every such task (Airflow's asset-triggered scheduling).

Publishing happens outside Airflow's tasks (the REST API in the api-server, the command line),
so the event is registered with Airflow's own ``AssetManager``, as Airflow's
``POST /api/v2/assets/events`` does, in the same metadata DB (an internal, through
``hooks.airflow.airflow_compat``).
"""

from __future__ import annotations

import logging

from airflow.sdk import Asset
from sqlalchemy.exc import SQLAlchemyError

from octotrain.catalog.dataset_versions import PublishedVersion
from octotrain.retraining import (
    ASSET_GROUP,
    dataset_asset_name,
    dataset_asset_uri,
    published_event_extra,
)

log = logging.getLogger(__name__)


def dataset_asset(project: str, dataset: str) -> Asset:
    """The Asset of dataset ``dataset`` of ``project``: its versions as they are published."""
    return Asset(
        name=dataset_asset_name(project, dataset),
        uri=dataset_asset_uri(project, dataset),
        group=ASSET_GROUP,
    )


def announce_published(version: PublishedVersion) -> bool:
    """Emit the dataset's Asset event for a newly published ``version`` from inside Airflow
    (the api-server); False when no DAG is scheduled on the dataset (Airflow knows no such
    active Asset), so that nobody retrains."""
    uri = dataset_asset_uri(version.project, version.dataset)
    extra = published_event_extra(version)
    try:
        return _register_event(uri, extra)
    except SQLAlchemyError as error:
        # The version is published (committed) either way; say loudly that nobody was told.
        log.error("published %s %s, but Airflow was not told: %s", version.dataset,
                  version.version, error)  # fmt: skip
        return False


def _register_event(uri: str, extra: dict[str, object]) -> bool:
    # Airflow's core models load only here: DAG files import this module for ``dataset_asset``.
    from hooks.airflow.airflow_compat import metadata_session, register_asset_event

    with metadata_session() as session:
        registered = register_asset_event(session, uri=uri, extra=extra)
    if registered is None:
        return False
    log.info("asset event of %s: %s", uri, "registered" if registered else "refused")
    return registered
