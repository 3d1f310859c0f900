"""The catalog schema on SQLite and PostgreSQL: migrations, constraints, the demo seed."""

from pathlib import Path

import pytest
from sqlalchemy import insert, inspect, select
from sqlalchemy.exc import IntegrityError

from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog import migrate
from octotrain.catalog.models import (
    AlgorithmCode,
    Dataset,
    DatasetVersion,
    ModelRepository,
    ModelVersion,
    ModelVersionSource,
    ModelVersionStatus,
    Project,
    Run,
    RunState,
    TrainingTask,
)
from tests.factories import seed

TABLES = {
    "admission_claims",
    "algorithm_code_versions",
    "projects",
    "project_members",
    "model_version_inputs",
    "resource_specs",
    "algorithms",
    "datasets",
    "dataset_versions",
    "data_caches",
    "model_repositories",
    "model_versions",
    "training_tasks",
    "runs",
    "node_holds",
    "catalog_alembic_version",
    "sweeps",
}


def test_migration_creates_every_table_and_is_repeatable(catalog: CatalogHook) -> None:
    assert set(inspect(catalog.engine).get_table_names()) == TABLES
    catalog.migrate()  # a second upgrade is a no-op, not an error
    assert set(inspect(catalog.engine).get_table_names()) == TABLES


def test_the_migrations_make_the_schema_the_models_declare(catalog: CatalogHook) -> None:
    """A column added to a model without its migration fails here, not in production."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from octotrain.catalog.models import Base

    with catalog.engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"version_table": migrate.VERSION_TABLE}
        )
        differences = compare_metadata(context, Base.metadata)
    assert differences == []


def copy_of(task: TrainingTask, name: str) -> TrainingTask:
    return TrainingTask(project_id=task.project_id, name=name, spec=task.spec)


def test_a_deleted_task_s_id_is_never_given_to_a_later_task(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    """The id names the task's Airflow DAG, which outlives the task: SQLite would otherwise
    give the newest task's id again after it was deleted."""
    seed(catalog, store)
    with catalog.session() as session:
        newest = copy_of(session.scalars(select(TrainingTask)).one(), "newest")
        session.add(newest)
    with catalog.session() as session:
        session.delete(session.get(TrainingTask, newest.id))
    with catalog.session() as session:
        later = copy_of(session.scalars(select(TrainingTask)).one(), "later")
        session.add(later)
    assert later.id > newest.id


def test_a_deleted_task_s_run_ids_are_never_given_to_later_runs(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    """Run ids name compare links, ``resumed_from`` and lineage: after the task with the newest
    runs is deleted, another task's next runs get new ids, not those."""
    seed(catalog, store)
    with catalog.session() as session:
        task = session.scalars(select(TrainingTask)).one()
        doomed = copy_of(task, "doomed")
        runs = [Run(task=doomed, airflow_run_id=f"r{n}", state=RunState.STOPPED, node_count=1)
                for n in (1, 2)]  # fmt: skip
        session.add_all([doomed, *runs])
    gone = [run.id for run in runs]
    with catalog.session() as session:
        session.delete(session.get(TrainingTask, doomed.id))
    with catalog.session() as session:
        task = session.scalars(select(TrainingTask)).one()
        later = [Run(task=task, airflow_run_id=f"l{n}", state=RunState.QUEUED, node_count=1)
                 for n in (1, 2)]  # fmt: skip
        session.add_all(later)
    assert min(run.id for run in later) > max(gone)


def test_every_sqlite_table_keeps_its_ids_from_being_reused(tmp_path: Path) -> None:
    """Migrated from 0008 as an old catalog would be: every table has AUTOINCREMENT after."""
    catalog = CatalogHook(f"sqlite:///{tmp_path / 'catalog.db'}")
    migrate.upgrade(catalog.engine, "0008")
    catalog.migrate()
    with catalog.engine.connect() as connection:
        schemas = dict(
            connection.exec_driver_sql(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
            ).all()
        )
    catalog.dispose()
    plain = [
        name
        for name in TABLES - {"catalog_alembic_version"}
        if "AUTOINCREMENT" not in schemas[name]
    ]
    assert plain == []


def test_upgrading_a_sqlite_catalog_to_ids_never_reused_keeps_every_task_and_run(
    tmp_path: Path, store: LocalFolderStore
) -> None:
    """The upgrade copies ``training_tasks``; with foreign keys on, dropping the old copy
    would have deleted every run (``ON DELETE CASCADE``)."""
    catalog = CatalogHook(f"sqlite:///{tmp_path / 'catalog.db'}")
    migrate.upgrade(catalog.engine, "0008")  # the same columns as the models: seed writes them
    code_versions = AlgorithmCode.__table__
    code_versions.create(catalog.engine)  # 0013's, which seed writes too; not what is tested
    seed(catalog, store)
    code_versions.drop(catalog.engine)
    with catalog.session() as session:
        task = session.scalars(select(TrainingTask)).one()
        newest = copy_of(task, "newest")
        session.add(newest)
        # 0008's columns only (a later migration adds others to runs)
        session.execute(insert(Run.__table__), [{"task_id": task.id, "airflow_run_id": f"r{n}",
                        "state": RunState.SUCCESS, "node_count": 1} for n in (1, 2)])  # fmt: skip
    before = _rows(catalog)
    catalog.migrate()
    assert _rows(catalog) == before and before == ([task.id, newest.id], 2)
    with catalog.session() as session:
        assert session.connection().exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        session.delete(session.get(TrainingTask, newest.id))
    with catalog.session() as session:
        later = copy_of(task, "later")
        session.add(later)
    assert later.id > newest.id
    catalog.dispose()


def _rows(catalog: CatalogHook) -> tuple[list[int], int]:
    with catalog.session() as session:
        tasks = session.scalars(select(TrainingTask.id).order_by(TrainingTask.id)).all()
        return list(tasks), len(session.scalars(select(Run.id)).all())


def test_demo_seed_is_idempotent(catalog: CatalogHook, store: LocalFolderStore) -> None:
    first = seed(catalog, store)
    second = seed(catalog, store)
    assert first.task_id == second.task_id
    assert "training_tasks:演示-房价回归" in first.created
    assert second.created == []
    with catalog.session() as session:
        assert session.scalars(select(Project)).all()[0].name == "demo"
        assert len(session.scalars(select(TrainingTask)).all()) == 1
        version = session.scalars(select(DatasetVersion)).one()
        assert version.file_count == 1 and version.size_bytes > 0
    assert [info.key for info in store.list(version.object_prefix)] == [
        f"{version.object_prefix}/train.csv"
    ]


def test_seed_restores_objects_missing_from_the_store(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    seed(catalog, store)
    store.delete_prefix("datasets")
    seed(catalog, store)
    assert store.list("datasets/demo/house-prices/v1")


def test_model_version_numbers_are_unique_per_repository(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    seed(catalog, store)

    def add_version(number: int) -> None:
        with catalog.session() as session:
            repository = session.scalars(select(ModelRepository)).one()
            session.add(
                ModelVersion(
                    repository_id=repository.id,
                    version=number,
                    status=ModelVersionStatus.COMPLETE,
                    source=ModelVersionSource.IMPORTED,
                    object_prefix=f"models/x/{number}",
                )
            )

    add_version(1)
    with pytest.raises(IntegrityError):
        add_version(1)
    add_version(2)


def test_referenced_rows_cannot_be_deleted(catalog: CatalogHook, store: LocalFolderStore) -> None:
    seed(catalog, store)
    with pytest.raises(IntegrityError), catalog.session() as session:
        session.delete(session.scalars(select(Dataset)).one())
        session.flush()


def test_enumerations_are_checked_by_the_database(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    seed(catalog, store)
    with pytest.raises(IntegrityError), catalog.session() as session:
        session.connection().exec_driver_sql("UPDATE dataset_versions SET status = 'bogus'")


def test_a_catalog_made_before_sweeps_moves_its_revision_table_and_shares_it_with_optuna(
    catalog: CatalogHook,
) -> None:
    """The revision used to be kept in Alembic's default table, which Optuna's study storage
    (in the same database since sweeps) keeps its own revision in."""
    from optuna.storages import RDBStorage

    with catalog.engine.begin() as connection:  # as such a catalog has it
        connection.exec_driver_sql(
            f"ALTER TABLE {migrate.VERSION_TABLE} RENAME TO {migrate.EARLIER_VERSION_TABLE}"
        )
    catalog.migrate()
    tables = set(inspect(catalog.engine).get_table_names())
    assert migrate.VERSION_TABLE in tables and migrate.EARLIER_VERSION_TABLE not in tables
    storage = RDBStorage(catalog.url)
    assert storage.get_current_version() == storage.get_head_version()
    storage.engine.dispose()
    catalog.migrate()  # Optuna's alembic_version is not taken for the catalog's
    with catalog.engine.connect() as connection:
        revision = connection.exec_driver_sql(f"SELECT version_num FROM {migrate.VERSION_TABLE}")
        assert revision.scalar() == "0014"
