"""Versions stored before manifests were kept get them recorded, once."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.backfill import backfill_manifests
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.catalog.models import DatasetVersion
from tests.factories import ADMIN


def test_a_version_without_a_manifest_gets_one_from_its_files(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    versions = DatasetVersions(rule_session, ADMIN, rule_store)
    recorded = dict(versions.get("demo", "house-prices", "v1").manifest)
    rule_session.execute(
        update(DatasetVersion)
        .where(DatasetVersion.object_prefix == "datasets/demo/house-prices/v1")
        .values(manifest={}, content_digest="")
    )
    rule_session.expire_all()
    assert backfill_manifests(rule_session, rule_store) == ["datasets/demo/house-prices/v1"]
    assert versions.get("demo", "house-prices", "v1").manifest == recorded
    assert backfill_manifests(rule_session, rule_store) == []
