"""An algorithm's code versions: each upload the next immutable version, in the store whole
or not at all; a task keeps the version it was saved with; deleting the algorithm deletes its
code."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.algorithm_code import AlgorithmCodes
from octotrain.catalog.models import Algorithm, AlgorithmCode
from octotrain.catalog.named_objects import Algorithms
from octotrain.errors import InvalidInput, NotFound
from octotrain.storage import ObjectStoreError
from octotrain.tasks import Tasks
from tests.factories import ADMIN, VALID_TASK, seed
from tests.store_doubles import FailingStore

MIB = 1024 * 1024
ALGORITHM = {"name": "boosted", "image": "python:3.11-slim", "command": ["python", "train.py"],
             "sample_type": "table"}  # fmt: skip


def code(folder: Path, text: str = "print(1)\n") -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.py").write_text(text)
    (folder / "lib.py").write_text("X = 2\n")
    return {"train.py": folder / "train.py", "lib/helpers.py": folder / "lib.py"}


def codes(session: Session, store: LocalFolderStore, *, max_bytes: int = MIB) -> AlgorithmCodes:
    return AlgorithmCodes(session, ADMIN, store, max_bytes=max_bytes)


def test_each_upload_is_the_next_version_and_a_task_keeps_the_one_it_was_saved_with(
    rule_session: Session, rule_store: LocalFolderStore, tmp_path: Path
) -> None:
    service = codes(rule_session, rule_store)
    algorithm = service.create_algorithm("demo", ALGORITHM, code(tmp_path / "a"))
    first = algorithm.code_versions[0]
    assert (first.version, first.file_count, first.uploaded_by) == (1, 2, "test-admin")
    assert sorted(first.manifest) == ["lib/helpers.py", "train.py"]
    assert rule_store.list(first.object_prefix)
    task = Tasks(rule_session, ADMIN).create(
        VALID_TASK | {"name": "boosting", "algorithm": "boosted", "parameters": {}}
    )
    assert task.spec["code_version"] == 1  # the newest when saved, written down
    second = service.upload("demo", "boosted", code(tmp_path / "b", "print(2)\n"))
    assert second.version == 2 and second.content_digest != first.content_digest
    assert Tasks(rule_session, ADMIN).get(task.id).spec["code_version"] == 1
    newer = Tasks(rule_session, ADMIN).create(
        VALID_TASK | {"name": "boosting-2", "algorithm": "boosted", "parameters": {}}
    )
    assert newer.spec["code_version"] == 2
    moved = Tasks(rule_session, ADMIN).update(task.id, {"code_version": 2})
    assert moved.spec["code_version"] == 2
    assert [row.version for row in service.list("demo", "boosted")] == [1, 2]


def test_a_task_naming_a_code_version_that_does_not_exist_is_refused(
    rule_session: Session, rule_store: LocalFolderStore, tmp_path: Path
) -> None:
    codes(rule_session, rule_store).create_algorithm("demo", ALGORITHM, code(tmp_path))
    Algorithms(rule_session, ADMIN, rule_store).create("demo", ALGORITHM | {"name": "bare"})
    tasks = Tasks(rule_session, ADMIN)
    with pytest.raises(InvalidInput) as caught:
        tasks.create(VALID_TASK | {"algorithm": "boosted", "code_version": 3, "parameters": {}})
    assert [str(p) for p in caught.value.problems] == [
        "code_version: algorithm 'boosted' has no code version 3 (it has 1)"
    ]
    with pytest.raises(InvalidInput, match="no code was uploaded to it"):
        tasks.create(VALID_TASK | {"algorithm": "bare", "code_version": 1, "parameters": {}})
    assert "code_version" not in tasks.create(VALID_TASK | {"algorithm": "bare"}).spec


def test_a_task_moved_to_another_algorithm_runs_that_algorithm_s_newest_code(
    rule_session: Session, rule_store: LocalFolderStore, tmp_path: Path
) -> None:
    service = codes(rule_session, rule_store)
    service.create_algorithm("demo", ALGORITHM, code(tmp_path / "a"))
    service.upload("demo", "boosted", code(tmp_path / "b", "print(2)\n"))
    task = Tasks(rule_session, ADMIN).create(
        VALID_TASK | {"algorithm": "boosted", "code_version": 1, "parameters": {}}
    )
    moved = Tasks(rule_session, ADMIN).update(task.id, {"algorithm": "linear-regression-numpy"})
    assert moved.spec["code_version"] == 1  # the demo algorithm's only version


@pytest.mark.parametrize(
    ("files", "field"),
    [
        ({}, "code"),
        ({"../escape.py": None}, "code.../escape.py"),
        ({"big.bin": "big"}, "code"),
    ],
)
def test_a_refused_upload_leaves_no_version_and_no_object(
    rule_session: Session,
    rule_store: LocalFolderStore,
    tmp_path: Path,
    files: dict[str, object],
    field: str,
) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * (MIB + 1))
    given = {path: big for path in files}
    service = codes(rule_session, rule_store)
    with pytest.raises(InvalidInput) as caught:
        service.upload("demo", "linear-regression-numpy", given)
    assert caught.value.problems[0].field == field
    found = Algorithms(rule_session, ADMIN, rule_store).get("demo", "linear-regression-numpy")
    assert [row.version for row in found.code_versions] == [1]
    assert len(rule_store.list(f"algorithms/{found.project_id}/{found.id}/")) == 2


def test_an_algorithm_whose_code_upload_fails_is_not_created(
    catalog: CatalogHook, tmp_path: Path
) -> None:
    seed(catalog, LocalFolderStore(tmp_path / "objects"))
    store = FailingStore(tmp_path / "objects", puts_left=1)
    with pytest.raises(ObjectStoreError, match="connection refused"), catalog.session() as s:
        codes(s, store).create_algorithm("demo", ALGORITHM, code(tmp_path / "in"))
    with catalog.session() as session:
        assert session.scalar(select(Algorithm).where(Algorithm.name == "boosted")) is None
        assert session.scalar(select(func.count()).select_from(AlgorithmCode)) == 2  # the demo's
    assert len(store.list("algorithms/")) == 3  # the demo's code, nothing of the failed upload


def test_deleting_an_algorithm_deletes_its_code_once_committed(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    seed(catalog, store)
    with catalog.session() as session:
        row = codes(session, store).create_algorithm("demo", ALGORITHM, code(tmp_path))
        prefix = row.code_versions[0].object_prefix
    assert store.list(prefix)
    with catalog.session() as session:
        Algorithms(session, ADMIN, store).delete("demo", "boosted")
    assert store.list(prefix) == []
    with catalog.session() as session, pytest.raises(NotFound):
        codes(session, store).get("demo", "boosted", 1)
