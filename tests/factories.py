"""Catalog content for tests: the demo project (as `make run` seeds it), test algorithms, and a
catalog with an object in every state the manual's rules distinguish."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from cli.demo import DemoSeed, seed_demo
from hooks.storage.catalog import CatalogHook
from hooks.storage.object_store import default_object_store
from octotrain.catalog.access import Scope
from octotrain.catalog.data_caches import DataCaches, fill_cache
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.models import (
    CacheStatus,
    DataCache,
    Dataset,
    DatasetVersion,
    DatasetVersionStatus,
    ModelRepository,
    ModelVersion,
    ModelVersionStatus,
    Run,
    RunState,
    utcnow,
)
from octotrain.catalog.named_objects import Algorithms, Datasets, ModelRepositories, ResourceSpecs
from octotrain.catalog.projects import Projects
from octotrain.storage import ObjectStore
from octotrain.tasks import Tasks

ADMIN = Scope.administrator("test-admin")
MEMBER = Scope(username="bob")
OUTSIDER = Scope(username="carol")

VALID_TASK = {
    "project": "demo",
    "name": "rule-check",
    "resource_spec": "cpu-small",
    "algorithm": "linear-regression-numpy",
    "model_repository": "house-price-model",
}


def seed(catalog: CatalogHook, store: ObjectStore) -> DemoSeed:
    return seed_demo(catalog, store)


def add_secretive_algorithm(
    catalog: CatalogHook, *, env: dict[str, str], parameters: list[dict[str, object]]
) -> None:
    """The algorithm ``with-secrets`` of the demo project: variables and parameters of which
    some are secrets by their names (``octotrain.secrets``)."""
    with catalog.session() as session:
        Algorithms(session, ADMIN, default_object_store()).create(
            "demo",
            {"name": "with-secrets", "image": "python:3.11", "command": ["python", "t.py"],
             "sample_type": "table", "env": env, "parameters": parameters},
        )  # fmt: skip


def add_command_algorithm(catalog: CatalogHook, name: str, code: str) -> None:
    """An algorithm whose command is ``python -c code`` (for failure scenarios)."""
    with catalog.session() as session:
        Algorithms(session, ADMIN, default_object_store()).create(
            "demo",
            {
                "name": name,
                "image": "python:3.11-slim",
                "command": ["python", "-c", code],
                "sample_type": "table",
            },
        )


def add_task(catalog: CatalogHook, **changes: object) -> int:
    document = {
        "project": "demo",
        "name": "t",
        "resource_spec": "cpu-small",
        "node_count": 2,
        "algorithm": "linear-regression-numpy",
        "parameters": {"epochs": 5},
        "model_repository": "house-price-model",
        "data_inputs": [{"dataset": "house-prices", "version": "v1"}],
    } | changes
    with catalog.session() as session:
        return Tasks(session, ADMIN).create(document).id


def running_runs(catalog: CatalogHook, task_id: int, count: int) -> list[int]:
    """``count`` catalog runs of 2 nodes of task ``task_id``, running; their ids."""
    with catalog.session() as session:
        runs = [
            Run(task_id=task_id, airflow_run_id=f"manual__{n}", state=RunState.RUNNING,
                node_count=2)
            for n in range(count)
        ]  # fmt: skip
        session.add_all(runs)
        session.flush()
        return [run.id for run in runs]


def build_rule_catalog(catalog: CatalogHook, store: ObjectStore, scratch: Path) -> None:
    """The demo project plus an object in every state a task's rules tell apart:

    - specs ``cpu-small`` (CCE, 4 nodes), ``big-cce`` (CCE, 128 nodes; the project allows 64)
      and ``modelarts-gpu`` (ModelArts, 64 nodes);
    - algorithms ``linear-regression-numpy`` (custom, table) and ``image-algo`` (image only,
      table, one parameter of each type, ``n`` required);
    - datasets ``house-prices`` (v1 published), ``many`` (v1…v9 published), ``imported`` (v1
      awaiting release), ``pending`` (v1 importing, v2 failed), ``raw`` (unannotated),
      ``images`` (image samples); caches ``hot`` (cached), ``stale`` (expired), ``broken``
      (failed);
    - model repository ``house-price-model`` with complete v1…v10 and ``broken-model`` with
      a failed v1;
    - project ``other`` (with spec, algorithm, dataset, repository ``other-*``), of which bob
      is a member; carol is in no project.
    """
    seed(catalog, store)
    sample = scratch / "sample.bin"
    sample.write_bytes(b"sample data\n")
    files = {"part-0.bin": sample}
    with catalog.session() as session:
        specs = ResourceSpecs(session, ADMIN)
        specs.create("demo", {"name": "big-cce", "cpu": 2, "memory_mib": 2048, "max_nodes": 128})
        specs.create(
            "demo",
            {"name": "modelarts-gpu", "kind": "modelarts", "cpu": 8, "memory_mib": 65536,
             "gpu_count": 1, "gpu_type": "nvidia-h200", "max_nodes": 64},
        )  # fmt: skip
        Algorithms(session, ADMIN, default_object_store()).create(
            "demo",
            {
                "name": "image-algo",
                "algorithm_type": "image_only",
                "image": "registry.example.com/team/image-algo:1.0",
                "command": ["/opt/algo/run"],
                "sample_type": "table",
                "parameters": [
                    {"name": "lr", "type": "float", "default": 0.1, "min": 0.0, "max": 1.0},
                    {"name": "optimizer", "type": "enum", "choices": ["adam", "sgd"],
                     "default": "adam"},
                    {"name": "shuffle", "type": "bool", "default": True},
                    {"name": "tag", "type": "string", "default": "x"},
                    {"name": "n", "type": "int", "required": True, "min": 1},
                ],
                "env": {"LOG_LEVEL": "info"},
            },
        )  # fmt: skip
        datasets = Datasets(session, ADMIN, store)
        versions = DatasetVersions(session, ADMIN, store)
        for name, sample_type, annotation in [
            ("many", "table", "annotated"),
            ("imported", "table", "annotated"),
            ("pending", "table", "annotated"),
            ("raw", "table", "unannotated"),
            ("images", "image", "annotated"),
        ]:
            datasets.create(
                "demo", {"name": name, "sample_type": sample_type, "annotation_status": annotation}
            )
        for number in range(1, 10):
            versions.create("demo", "many", {"version": f"v{number}"}, files)
            versions.publish("demo", "many", f"v{number}")
        versions.create("demo", "imported", {"version": "v1"}, files)
        for name in ("pending", "raw", "images"):
            versions.create("demo", name, {"version": "v1"}, files)
        versions.create("demo", "pending", {"version": "v2"}, files)
        versions.publish("demo", "raw", "v1")
        versions.publish("demo", "images", "v1")
        caches = DataCaches(session, ADMIN, store)
        for name in ("hot", "stale", "broken"):
            cache = caches.create(
                "demo", {"name": name, "dataset": "house-prices", "version": "v1"}
            )
            fill_cache(session, store, cache.id)
        repositories = ModelRepositories(session, ADMIN, store)
        repositories.create("demo", {"name": "broken-model"})
        models = ModelVersions(session, ADMIN, store)
        for _ in range(10):
            models.import_files("demo", "house-price-model", {}, files)
        models.import_files("demo", "broken-model", {}, files)

        projects = Projects(session, ADMIN)
        projects.create({"name": "other", "description": "another team"})
        projects.add_member("other", {"username": "bob"})
        specs.create("other", {"name": "other-spec", "cpu": 1, "memory_mib": 512})
        Algorithms(session, ADMIN, default_object_store()).create(
            "other",
            {"name": "other-algo", "image": "python:3.11", "command": ["python", "x.py"],
             "sample_type": "table"},
        )  # fmt: skip
        datasets.create("other", {"name": "other-data", "sample_type": "table"})
        repositories.create("other", {"name": "other-model"})
        session.flush()
        _set_states(session)


def _set_states(session: Session) -> None:
    """States that no service call produces by itself (an import in progress, failures,
    expiry)."""
    pending = select(Dataset.id).where(Dataset.name == "pending").scalar_subquery()
    for version, status in (
        ("v1", DatasetVersionStatus.IMPORTING),
        ("v2", DatasetVersionStatus.FAILED),
    ):
        session.execute(
            update(DatasetVersion)
            .where(DatasetVersion.dataset_id == pending, DatasetVersion.version == version)
            .values(status=status)
        )
    session.execute(
        update(DataCache)
        .where(DataCache.name == "stale")
        .values(expires_at=utcnow() - timedelta(hours=1))
    )
    session.execute(
        update(DataCache).where(DataCache.name == "broken").values(status=CacheStatus.FAILED)
    )
    broken = select(ModelRepository.id).where(ModelRepository.name == "broken-model")
    session.execute(
        update(ModelVersion)
        .where(ModelVersion.repository_id.in_(broken))
        .values(status=ModelVersionStatus.FAILED)
    )
