"""Resource specs, algorithms, datasets and model repositories: create, list, show, change,
delete; names unique per project; deleting or renaming what is in use is refused by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.models import DatasetVersion, ModelVersion
from octotrain.catalog.named_objects import Algorithms, Datasets, ModelRepositories, ResourceSpecs
from octotrain.errors import InvalidInput, NotFound, StillReferenced
from octotrain.tasks import Tasks
from tests.factories import ADMIN, MEMBER, OUTSIDER, VALID_TASK, seed

SPEC = {"name": "cpu-large", "cpu": 4, "memory_mib": 8192, "max_nodes": 8}
ALGORITHM = {
    "name": "xgb",
    "image": "python:3.11-slim",
    "command": ["python", "train.py"],
    "sample_type": "table",
    "parameters": [{"name": "depth", "type": "int", "default": 6, "min": 1, "max": 20}],
    "env": {"THREADS": "2"},
}


def test_crud_of_a_resource_spec(rule_session: Session) -> None:
    specs = ResourceSpecs(rule_session, ADMIN)
    created = specs.create("demo", SPEC)
    assert (created.kind, created.gpu_count, created.cpu) == ("cce", 0, 4.0)
    assert "cpu-large" in [row.name for row in specs.list("demo")]
    changed = specs.update("demo", "cpu-large", {"max_nodes": 16, "kind": "modelarts"})
    assert (changed.max_nodes, changed.kind) == (16, "modelarts")
    assert specs.get("demo", "cpu-large").max_nodes == 16
    specs.delete("demo", "cpu-large")
    with pytest.raises(NotFound, match="resource spec 'cpu-large' not found in project 'demo'"):
        specs.get("demo", "cpu-large")


def test_names_are_unique_per_project_and_problems_come_together(rule_session: Session) -> None:
    specs = ResourceSpecs(rule_session, ADMIN)
    with pytest.raises(InvalidInput) as caught:
        specs.create("demo", SPEC | {"name": "cpu-small", "cpu": 0, "memory_mib": "lots"})
    assert {p.field: p.rule for p in caught.value.problems} == {
        "cpu": "must be more than 0, got 0",
        "memory_mib": "must be a whole number, got 'lots'",
        "name": "resource spec 'cpu-small' already exists in project 'demo'",
    }
    assert specs.create("other", SPEC | {"name": "cpu-small"}).project.name == "other"


def test_algorithm_parameters_and_variables_are_stored_as_declared(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    algorithm = Algorithms(rule_session, ADMIN, rule_store).create("demo", ALGORITHM)
    assert algorithm.parameters == [
        {
            "name": "depth",
            "type": "int",
            "default": 6,
            "required": False,
            "min": 1,
            "max": 20,
            "choices": [],
            "description": "",
        }
    ]
    assert algorithm.env == {"THREADS": "2"}
    task = Tasks(rule_session, ADMIN).create(
        VALID_TASK | {"algorithm": "xgb", "parameters": {"depth": 3}, "env": {"THREADS": "8"}}
    )
    assert task.spec["parameters"] == {"depth": 3}


def test_renaming_or_deleting_what_a_task_uses_is_refused_with_its_name(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    algorithms = Algorithms(rule_session, ADMIN, rule_store)
    algorithms.create("demo", ALGORITHM)
    Tasks(rule_session, ADMIN).create(VALID_TASK | {"name": "uses-xgb", "algorithm": "xgb"})
    with pytest.raises(StillReferenced) as caught:
        algorithms.delete("demo", "xgb")
    assert caught.value.referrers == ["task 'uses-xgb'"]
    assert "algorithm 'xgb' cannot be deleted" in str(caught.value)
    with pytest.raises(StillReferenced, match="cannot be renamed"):
        algorithms.update("demo", "xgb", {"name": "xgb2"})
    assert algorithms.update("demo", "xgb", {"description": "boosted trees"}).name == "xgb"


@pytest.mark.parametrize(
    ("service", "name", "referrers"),
    [
        (
            lambda session, _store: ResourceSpecs(session, ADMIN),
            "cpu-small",
            ["task '演示-房价回归'"],
        ),
        (
            lambda session, store: Algorithms(session, ADMIN, store),
            "linear-regression-numpy",
            ["task '演示-房价回归'"],
        ),
    ],
)
def test_the_demo_tasks_references_are_protected(
    rule_session: Session,
    rule_store: LocalFolderStore,
    service: Callable[[Session, LocalFolderStore], Any],
    name: str,
    referrers: list[str],
) -> None:
    with pytest.raises(StillReferenced) as caught:
        service(rule_session, rule_store).delete("demo", name)
    assert caught.value.referrers == referrers


def test_a_dataset_used_by_a_cache_and_a_task_names_both(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    store = rule_store
    with pytest.raises(StillReferenced) as caught:
        Datasets(rule_session, ADMIN, store).delete("demo", "house-prices")
    assert caught.value.referrers == [
        "task '演示-房价回归'",
        "data cache 'broken'",
        "data cache 'hot'",
        "data cache 'stale'",
    ]


def test_members_work_in_their_projects_only(rule_session: Session) -> None:
    assert ResourceSpecs(rule_session, MEMBER).create("other", SPEC).name == "cpu-large"
    for scope in (MEMBER, OUTSIDER):
        with pytest.raises(NotFound, match="project 'demo' not found"):
            ResourceSpecs(rule_session, scope).list("demo")
        with pytest.raises(NotFound, match="project 'demo' not found"):
            ResourceSpecs(rule_session, scope).create("demo", SPEC)


def test_changes_must_be_an_object_and_keep_every_rule(rule_session: Session) -> None:
    specs = ResourceSpecs(rule_session, ADMIN)
    with pytest.raises(InvalidInput, match="changes must be an object"):
        specs.update("demo", "cpu-small", ["max_nodes", 3])
    with pytest.raises(InvalidInput, match="max_nodes"):
        specs.update("demo", "cpu-small", {"max_nodes": 0})
    with pytest.raises(InvalidInput, match="is not a known field"):
        specs.update("demo", "cpu-small", {"gpus": 2})


def test_deleting_a_dataset_deletes_its_versions_and_their_files_once_committed(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    seed(catalog, store)
    sample = tmp_path / "a.csv"
    sample.write_text("x\n1\n")
    with catalog.session() as session:
        Datasets(session, ADMIN, store).create("demo", {"name": "scratch", "sample_type": "table"})
        for version in ("v1", "v2"):
            DatasetVersions(session, ADMIN, store).create(
                "demo", "scratch", {"version": version}, {"a.csv": sample}
            )
    assert len(store.list("datasets/demo/scratch")) == 2
    with catalog.session() as session:
        Datasets(session, ADMIN, store).delete("demo", "scratch")
        assert len(store.list("datasets/demo/scratch")) == 2  # not before the commit
    assert store.list("datasets/demo/scratch") == []
    with catalog.session() as session:
        assert session.scalar(select(func.count()).select_from(DatasetVersion)) == 1


def test_a_failed_delete_keeps_every_file(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path: Path
) -> None:
    seed(catalog, store)
    sample = tmp_path / "m.bin"
    sample.write_bytes(b"weights")
    with catalog.session() as session:
        ModelRepositories(session, ADMIN, store).create("demo", {"name": "scratch"})
        ModelVersions(session, ADMIN, store).import_files("demo", "scratch", {}, {"m.bin": sample})
    with pytest.raises(RuntimeError, match="boom"), catalog.session() as session:
        ModelRepositories(session, ADMIN, store).delete("demo", "scratch")
        raise RuntimeError("boom")  # the request fails after the delete: rolled back
    assert store.list("models/demo/scratch/1")
    with catalog.session() as session:
        assert session.scalar(select(func.count()).select_from(ModelVersion)) == 1
