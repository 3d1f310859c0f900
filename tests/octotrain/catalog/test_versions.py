"""Dataset versions and model versions: imports that appear whole or not at all, with their
manifests; publishing; deletion refused while lineage or a task uses them."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.models import (
    DatasetVersion,
    DatasetVersionStatus,
    ModelVersion,
    ModelVersionInput,
)
from octotrain.errors import InvalidInput, StillReferenced
from octotrain.storage import ObjectStoreError
from octotrain.tasks import Tasks
from tests.factories import ADMIN, VALID_TASK, seed
from tests.store_doubles import FailingStore


def files(folder: Path, count: int) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    for number in range(count):
        path = folder / f"f{number}.bin"
        path.write_bytes(bytes([number]) * 100)
        made[f"sub/f{number}.bin"] = path
    return made


def test_an_import_awaits_release_until_published(
    rule_session: Session, rule_store: LocalFolderStore, tmp_path: Path
) -> None:
    store = rule_store
    versions = DatasetVersions(rule_session, ADMIN, store)
    version = versions.create("demo", "house-prices", {"version": "v2"}, files(tmp_path, 3))
    assert (version.status, version.file_count, version.size_bytes) == (
        DatasetVersionStatus.IMPORTED_AWAITING_RELEASE,
        3,
        300,
    )
    assert [info.key for info in store.list(version.object_prefix)] == [
        f"datasets/demo/house-prices/v2/sub/f{n}.bin" for n in range(3)
    ]
    assert versions.publish("demo", "house-prices", "v2").status == DatasetVersionStatus.PUBLISHED
    with pytest.raises(InvalidInput, match="only an imported version can be published"):
        versions.publish("demo", "pending", "v2")


def test_import_rules(rule_session: Session, rule_store: LocalFolderStore, tmp_path: Path) -> None:
    store = rule_store
    versions = DatasetVersions(rule_session, ADMIN, store)
    with pytest.raises(InvalidInput, match="already has version v1"):
        versions.create("demo", "house-prices", {"version": "v1"}, files(tmp_path, 1))
    with pytest.raises(InvalidInput, match="version: must be 1-32"):
        versions.create("demo", "house-prices", {"version": "../v3"}, files(tmp_path, 1))
    with pytest.raises(InvalidInput, match="at least one file"):
        versions.create("demo", "house-prices", {"version": "v3"}, {})
    for bad in ("../x", "/etc/passwd", "a//b", "a\\b", "./x", ""):
        with pytest.raises(InvalidInput, match="relative path"):
            versions.create("demo", "house-prices", {"version": "v3"}, {bad: tmp_path})
    assert not store.list("datasets/demo/house-prices/v3")


@pytest.mark.parametrize("fail_after", [0, 2])
def test_a_failed_import_leaves_no_version_and_no_file(
    catalog: CatalogHook, tmp_path: Path, fail_after: int
) -> None:
    seed(catalog, LocalFolderStore(tmp_path / "objects"))
    store = FailingStore(tmp_path / "objects", puts_left=fail_after)
    for attempt in (
        lambda session: DatasetVersions(session, ADMIN, store).create(
            "demo", "house-prices", {"version": "v2"}, files(tmp_path / "in", 4)
        ),
        lambda session: ModelVersions(session, ADMIN, store).import_files(
            "demo", "house-price-model", {}, files(tmp_path / "in", 4)
        ),
    ):
        with pytest.raises(ObjectStoreError, match="connection refused"), catalog.session() as s:
            attempt(s)
    assert store.list("datasets/demo/house-prices/v2") == []
    assert store.list("models") == []
    assert store.list("staging") == []
    with catalog.session() as session:
        assert session.scalar(select(func.count()).select_from(ModelVersion)) == 0
        assert session.scalar(select(func.count()).select_from(DatasetVersion)) == 1


def test_a_commit_that_fails_removes_the_imported_files(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    seed(catalog, store)
    with pytest.raises(RuntimeError), catalog.session() as session:
        version = ModelVersions(session, ADMIN, store).import_files(
            "demo", "house-price-model", {}, files(tmp_path, 2)
        )
        assert store.list(version.object_prefix)
        raise RuntimeError("the request failed after the import")
    assert store.list("models") == []


def test_model_imports_number_versions_and_record_who(
    rule_session: Session, rule_store: LocalFolderStore, tmp_path: Path
) -> None:
    store = rule_store
    models = ModelVersions(rule_session, ADMIN, store)
    version = models.import_files(
        "demo", "house-price-model", {"description": "from my laptop"}, files(tmp_path, 1)
    )
    assert (version.version, version.source, version.description) == (
        11,
        "imported",
        "from my laptop",
    )
    assert version.lineage["imported_by"] == "test-admin"
    assert [v.version for v in models.list("demo", "house-price-model")][-1] == 11
    with pytest.raises(InvalidInput, match="description"):
        models.import_files("demo", "house-price-model", {"description": "a/b"}, files(tmp_path, 1))


def test_deleting_a_version_used_by_a_task_or_by_lineage_is_refused(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    store = rule_store
    models = ModelVersions(rule_session, ADMIN, store)
    Tasks(rule_session, ADMIN).create(
        VALID_TASK
        | {
            "name": "incremental",
            "training_kind": "incremental",
            "input_models": [{"repository": "house-price-model", "version": 2}],
        }
    )
    with pytest.raises(StillReferenced) as caught:
        models.delete("demo", "house-price-model", 2)
    assert caught.value.referrers == ["task 'incremental'"]
    # version 4 was trained from version 3 and from dataset version many v1
    third, fourth = (
        models.get("demo", "house-price-model", 3),
        models.get("demo", "house-price-model", 4),
    )
    many_v1 = DatasetVersions(rule_session, ADMIN, store).get("demo", "many", "v1")
    fourth.inputs = [
        ModelVersionInput(input_model_version_id=third.id, via="model"),
        ModelVersionInput(dataset_version_id=many_v1.id, via="dataset"),
    ]
    rule_session.flush()
    with pytest.raises(StillReferenced) as caught:
        models.delete("demo", "house-price-model", 3)
    assert caught.value.referrers == ["model version 'house-price-model' 4"]
    with pytest.raises(StillReferenced) as caught:
        DatasetVersions(rule_session, ADMIN, store).delete("demo", "many", "v1")
    assert caught.value.referrers == ["model version 'house-price-model' 4"]
    models.delete("demo", "house-price-model", 4)  # nothing refers to 4
    models.delete("demo", "house-price-model", 3)  # nor, now, to 3
