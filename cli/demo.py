"""Seed the demo project (examples/demo) into the catalog and the object store, idempotently.

Everything goes through the catalog services, so the demo obeys the same rules as anything a
user creates; what exists already (found by name) is reused.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from hooks.storage.catalog import CatalogHook
from hooks.storage.object_store import upload_folder
from octotrain.catalog.access import Scope
from octotrain.catalog.algorithm_code import AlgorithmCodes
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.catalog.models import DatasetVersionStatus
from octotrain.catalog.named_objects import Algorithms, Datasets, ModelRepositories, ResourceSpecs
from octotrain.catalog.projects import Projects
from octotrain.code_folders import folder_files
from octotrain.errors import NotFound
from octotrain.settings import REPO_ROOT, get_settings
from octotrain.storage import ObjectStore
from octotrain.tasks import Tasks

DEMO_DIR = REPO_ROOT / "examples" / "demo"
SEEDER = Scope.administrator("octotrain-demo")
# Keys of a demo dataset version that say how to generate its data, not catalog fields.
GENERATOR_KEYS = ("rows", "features", "seed")


@dataclass(frozen=True)
class DemoSeed:
    project: str
    task_id: int
    task_name: str
    created: list[str]


def write_demo_csv(folder: Path, *, rows: int, features: int, seed: int) -> Path:
    """A table of ``features`` columns and a noisy linear target (last column)."""
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(rows, features))
    true_weights = np.linspace(1.0, 3.0, features)
    target = data @ true_weights + 5.0 + rng.normal(scale=0.1, size=rows)
    header = ",".join([*(f"x{i}" for i in range(features)), "y"])
    path = folder / "train.csv"
    np.savetxt(
        path, np.column_stack([data, target]), delimiter=",", header=header, comments="", fmt="%.6f"
    )
    return path


def seed_demo(catalog: CatalogHook, store: ObjectStore) -> DemoSeed:
    catalog_doc = yaml.safe_load((DEMO_DIR / "catalog.yaml").read_text(encoding="utf-8"))
    task_doc = yaml.safe_load((DEMO_DIR / "task.yaml").read_text(encoding="utf-8"))
    created: list[str] = []

    def ensure(label: str, get: Callable[[], Any], create: Callable[[], Any]) -> Any:
        try:
            return get()
        except NotFound:
            created.append(label)
            return create()

    with catalog.session() as session:
        project_doc = catalog_doc["project"]
        name = project_doc["name"]
        projects = Projects(session, SEEDER)
        ensure(f"projects:{name}", lambda: projects.get(name), lambda: projects.create(project_doc))
        services: list[tuple[str, Any]] = [
            ("resource_specs", ResourceSpecs(session, SEEDER)),
            ("model_repositories", ModelRepositories(session, SEEDER, store)),
        ]
        for kind, service in services:
            for doc in catalog_doc[kind]:
                ensure(
                    f"{kind}:{doc['name']}",
                    lambda service=service, doc=doc: service.get(name, doc["name"]),
                    lambda service=service, doc=doc: service.create(name, doc),
                )
        algorithms = Algorithms(session, SEEDER, store)
        codes = AlgorithmCodes(session, SEEDER, store, max_bytes=get_settings().max_code_bytes)
        for doc in catalog_doc["algorithms"]:
            document = {key: value for key, value in doc.items() if key != "code"}
            code = folder_files(REPO_ROOT / doc["code"], max_bytes=codes.max_bytes)
            ensure(
                f"algorithms:{doc['name']}",
                lambda document=document: algorithms.get(name, document["name"]),
                lambda document=document, code=code: codes.create_algorithm(name, document, code),
            )
        datasets = Datasets(session, SEEDER, store)
        versions = DatasetVersions(session, SEEDER, store)
        for doc in catalog_doc["datasets"]:
            dataset = {key: value for key, value in doc.items() if key != "versions"}
            ensure(
                f"datasets:{dataset['name']}",
                lambda dataset=dataset: datasets.get(name, dataset["name"]),
                lambda dataset=dataset: datasets.create(name, dataset),
            )
            for version_doc in doc["versions"]:
                _seed_version(versions, store, name, dataset["name"], version_doc, created)
        tasks = Tasks(session, SEEDER)
        task = next((t for t in tasks.list(name) if t.name == task_doc["name"]), None)
        if task is None:
            task = tasks.create(task_doc)
            created.append(f"training_tasks:{task.name}")
        return DemoSeed(project=name, task_id=task.id, task_name=task.name, created=created)


def _seed_version(
    versions: DatasetVersions,
    store: ObjectStore,
    project: str,
    dataset: str,
    doc: dict[str, Any],
    created: list[str],
) -> None:
    generator = {key: doc[key] for key in GENERATOR_KEYS}
    with tempfile.TemporaryDirectory() as scratch:
        csv = write_demo_csv(Path(scratch), **generator)
        try:
            version = versions.get(project, dataset, doc["version"])
        except NotFound:
            version = versions.create(
                project, dataset, {"version": doc["version"]}, {csv.name: csv}
            )
            created.append(f"dataset_versions:{doc['version']}")
        else:
            if not store.list(version.object_prefix):
                # Its objects were removed from the store: generate them again.
                upload_folder(store, Path(scratch), version.object_prefix)
    if doc["status"] == DatasetVersionStatus.PUBLISHED:
        versions.publish(project, dataset, doc["version"])
