"""Lineage shown both ways: a model version names what made it, a dataset version (and a
model version) the versions trained from it."""

from __future__ import annotations

from sqlalchemy.orm import Session

from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.models import ModelVersionInput
from octotrain.catalog.views import DatasetVersionView, ModelVersionView
from tests.factories import ADMIN


def test_lineage_both_ways(rule_session: Session, rule_store: LocalFolderStore) -> None:
    models = ModelVersions(rule_session, ADMIN, rule_store)
    first, second = (models.get("demo", "house-price-model", n) for n in (1, 2))
    data = DatasetVersions(rule_session, ADMIN, rule_store).get("demo", "many", "v3")
    second.inputs = [
        ModelVersionInput(dataset_version_id=data.id, via="cache:hot"),
        ModelVersionInput(input_model_version_id=first.id, via="model"),
    ]
    rule_session.flush()
    rule_session.expire_all()
    assert ModelVersionView.of(models.get("demo", "house-price-model", 2)).inputs == [
        {"dataset": "many", "version": "v3", "via": "cache:hot"},
        {"repository": "house-price-model", "version": 1, "via": "model"},
    ]
    made = [{"repository": "house-price-model", "version": 2, "via": "cache:hot"}]
    assert DatasetVersionView.of(data).produced == made
    from_first = ModelVersionView.of(models.get("demo", "house-price-model", 1)).produced
    assert from_first == [{"repository": "house-price-model", "version": 2, "via": "model"}]
