"""Retraining when a dataset gets a new published version: how a dataset is named as an
Airflow Asset, and what an event of it says about the version. Plain names, no Airflow, so
that the command line and the DAGs agree without importing one another."""

from __future__ import annotations

from urllib.parse import quote

from octotrain.catalog.dataset_versions import PublishedVersion

ASSET_GROUP = "octotrain-datasets"


def dataset_asset_name(project: str, dataset: str) -> str:
    return f"octotrain-dataset:{project}/{dataset}"


def dataset_asset_uri(project: str, dataset: str) -> str:
    """Airflow keeps ``x-`` schemes as they are; names may be CJK, so they are %-encoded."""
    return f"x-octotrain://datasets/{quote(project, safe='')}/{quote(dataset, safe='')}"


def published_event_extra(version: PublishedVersion) -> dict[str, object]:
    """What the Asset event says about the version (shown in Airflow)."""
    return {
        "project": version.project,
        "dataset": version.dataset,
        "version": version.version,
        "dataset_version_id": version.dataset_version_id,
    }
