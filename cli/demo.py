"""Seed the demo project (examples/demo) into the catalog and the object store, idempotently."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session

from hooks.catalog import CatalogHook
from hooks.object_store import ObjectStore, upload_folder
from octotrain.catalog.models import (
    Algorithm,
    Dataset,
    DatasetVersion,
    ModelRepository,
    Project,
    ResourceSpec,
    TrainingTask,
)
from octotrain.settings import REPO_ROOT
from octotrain.tasks import create_training_task

DEMO_DIR = REPO_ROOT / "examples" / "demo"


@dataclass(frozen=True)
class DemoSeed:
    project: str
    task_id: int
    task_name: str
    created: list[str]


def _get_or_add(session: Session, model: type, created: list[str], **fields: Any) -> Any:
    """The row of ``model`` with the identifying ``fields``; added (and noted) if missing."""
    keys = {
        name: fields[name]
        for name in ("project_id", "dataset_id", "name", "version")
        if name in fields
    }
    row = session.scalars(select(model).filter_by(**keys)).one_or_none()
    if row is None:
        row = model(**fields)
        session.add(row)
        session.flush()
        created.append(f"{model.__tablename__}:{fields.get('name') or fields.get('version')}")
    return row


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
    with catalog.session() as session:
        project = _get_or_add(session, Project, created, **catalog_doc["project"])
        for spec in catalog_doc["resource_specs"]:
            _get_or_add(session, ResourceSpec, created, project_id=project.id, **spec)
        for algorithm in catalog_doc["algorithms"]:
            _get_or_add(session, Algorithm, created, project_id=project.id, **algorithm)
        for repository in catalog_doc["model_repositories"]:
            _get_or_add(session, ModelRepository, created, project_id=project.id, **repository)
        for dataset_doc in catalog_doc["datasets"]:
            versions = dataset_doc.pop("versions")
            dataset = _get_or_add(session, Dataset, created, project_id=project.id, **dataset_doc)
            for version_doc in versions:
                _seed_version(session, store, project, dataset, version_doc, created)
        task = session.scalars(
            select(TrainingTask).where(
                TrainingTask.project_id == project.id, TrainingTask.name == task_doc["name"]
            )
        ).one_or_none()
        if task is None:
            task = create_training_task(session, task_doc)
            created.append(f"training_tasks:{task.name}")
        return DemoSeed(project=project.name, task_id=task.id, task_name=task.name, created=created)


def _seed_version(
    session: Session,
    store: ObjectStore,
    project: Project,
    dataset: Dataset,
    doc: dict[str, Any],
    created: list[str],
) -> None:
    prefix = f"datasets/{project.name}/{dataset.name}/{doc['version']}"
    version = _get_or_add(
        session,
        DatasetVersion,
        created,
        dataset_id=dataset.id,
        version=doc["version"],
        status=doc["status"],
        object_prefix=prefix,
    )
    if store.list(prefix):
        return
    # New, or its objects were removed from the store: (re)generate them.
    with tempfile.TemporaryDirectory() as scratch:
        write_demo_csv(Path(scratch), rows=doc["rows"], features=doc["features"], seed=doc["seed"])
        uploaded = upload_folder(store, Path(scratch), prefix)
    version.size_bytes = sum(info.size for info in uploaded)
    version.file_count = len(uploaded)
