"""Catalog content for tests: the demo project (as `make run` seeds it) plus test algorithms."""

from __future__ import annotations

from cli.demo import DemoSeed, seed_demo
from hooks.catalog import CatalogHook
from octotrain.catalog.access import Scope
from octotrain.catalog.models import Algorithm, AlgorithmType, Project
from octotrain.storage import ObjectStore
from octotrain.tasks import Tasks

ADMIN = Scope.administrator("test-admin")


def seed(catalog: CatalogHook, store: ObjectStore) -> DemoSeed:
    return seed_demo(catalog, store)


def add_command_algorithm(catalog: CatalogHook, name: str, code: str) -> None:
    """An algorithm whose command is ``python -c code`` (for failure scenarios)."""
    with catalog.session() as session:
        project = session.query(Project).filter_by(name="demo").one()
        session.add(
            Algorithm(
                project_id=project.id,
                name=name,
                algorithm_type=AlgorithmType.CUSTOM_SCRIPT,
                image="python:3.11-slim",
                command=["python", "-c", code],
                parameters=[],
                env={},
                sample_type="table",
            )
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
