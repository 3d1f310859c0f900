"""``octotrain project|resource-spec|algorithm|dataset|cache|model-repository …``: catalog
management over the same services as the REST API."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from sqlalchemy.orm import Session

from cli.lazy_commands import help_of
from cli.output import FileOption, JsonOption, load_document, reported, show, show_list
from cli.session import catalog_session, cli_scope
from hooks.airflow.airflow_rest import AirflowApiError, AirflowRestClient
from hooks.storage.catalog import CatalogHook
from hooks.storage.object_store import default_object_store
from octotrain.catalog.algorithm_code import AlgorithmCodes
from octotrain.catalog.data_caches import DataCaches, fill_waiting_caches
from octotrain.catalog.dataset_versions import DatasetVersions, PublishedVersion
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.named_objects import (
    Algorithms,
    Datasets,
    ModelRepositories,
    NamedObjects,
    ResourceSpecs,
)
from octotrain.catalog.paging import every_item
from octotrain.catalog.projects import Projects
from octotrain.catalog.views import (
    AlgorithmCodeFilesView,
    AlgorithmCodeView,
    AlgorithmView,
    DataCacheView,
    DatasetVersionView,
    DatasetView,
    ModelRepositoryView,
    ModelVersionView,
    ProjectView,
    ResourceSpecView,
)
from octotrain.code_folders import folder_files
from octotrain.retraining import dataset_asset_uri, published_event_extra
from octotrain.settings import get_settings

Project = Annotated[
    str, typer.Option("--project", "-p", envvar="OCTOTRAIN_PROJECT", help="The project.")
]
Name = Annotated[str, typer.Argument(help="The object's name.")]
FromPath = Annotated[
    Path,
    typer.Option("--from", exists=True, help="A file, or a folder whose files keep their paths."),
]


def files_of(path: Path) -> dict[str, Path]:
    """{relative path: file} of a file or of every file under a folder."""
    if path.is_file():
        return {path.name: path}
    return {
        item.relative_to(path).as_posix(): item
        for item in sorted(path.rglob("*"))
        if item.is_file()
    }


# ---- projects -------------------------------------------------------------------------------

projects_app = typer.Typer(help=help_of("project"), no_args_is_help=True)
members_app = typer.Typer(help="Project members (Airflow user names).", no_args_is_help=True)
projects_app.add_typer(members_app, name="member")


@projects_app.command("list")
def list_projects(as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        projects = Projects(session, cli_scope())
        rows = [ProjectView.of(row) for row in every_item(projects.page)]
        show_list(rows, ["name", "description", "max_nodes", "members"], as_json=as_json)


@projects_app.command("show")
def show_project(name: Name, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        show(ProjectView.of(Projects(session, cli_scope()).get(name)), as_json=as_json)


@projects_app.command("create")
def create_project(file: FileOption, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        row = Projects(session, cli_scope()).create(load_document(file))
        show(ProjectView.of(row), as_json=as_json)


@projects_app.command("update")
def update_project(name: Name, file: FileOption, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        row = Projects(session, cli_scope()).update(name, load_document(file))
        show(ProjectView.of(row), as_json=as_json)


@projects_app.command("delete")
def delete_project(name: Name, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        Projects(session, cli_scope()).delete(name)
    typer.echo(f"deleted project '{name}'")


@members_app.command("add")
def add_member(project: Name, username: str, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        row = Projects(session, cli_scope()).add_member(project, {"username": username})
        show(ProjectView.of(row), as_json=as_json)


@members_app.command("remove")
def remove_member(project: Name, username: str, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        row = Projects(session, cli_scope()).remove_member(project, username)
        show(ProjectView.of(row), as_json=as_json)


# ---- objects named within a project ---------------------------------------------------------


def named_object_commands(
    *,
    kind: str,
    plural: str,
    service: Callable[[Session], NamedObjects[Any]],
    view: Any,
    columns: list[str],
    create: Callable[..., None] | None = None,
) -> typer.Typer:
    """list / show / create / update / delete commands for one kind of named object;
    ``create`` replaces the plain create command (algorithms take their code with it)."""
    commands = typer.Typer(help=f"The {plural} of a project.", no_args_is_help=True)

    @commands.command("list", help=f"List the project's {plural}.")
    def list_objects(project: Project, as_json: JsonOption = False) -> None:
        with reported(as_json=as_json), catalog_session() as session:
            found = service(session)
            rows = [view.of(row) for row in every_item(partial(found.page, project))]
            show_list(rows, columns, as_json=as_json)

    @commands.command("show", help=f"Show one {kind}.")
    def show_object(name: Name, project: Project, as_json: JsonOption = False) -> None:
        with reported(as_json=as_json), catalog_session() as session:
            show(view.of(service(session).get(project, name)), as_json=as_json)

    def create_object(file: FileOption, project: Project, as_json: JsonOption = False) -> None:
        with reported(as_json=as_json), catalog_session() as session:
            show(view.of(service(session).create(project, load_document(file))), as_json=as_json)

    commands.command("create", help=f"Create a {kind} from a YAML or JSON document.")(
        create or create_object
    )

    @commands.command("update", help=f"Change a {kind}: the document's fields are merged in.")
    def update_object(
        name: Name, file: FileOption, project: Project, as_json: JsonOption = False
    ) -> None:
        with reported(as_json=as_json), catalog_session() as session:
            row = service(session).update(project, name, load_document(file))
            show(view.of(row), as_json=as_json)

    @commands.command("delete", help=f"Delete a {kind} that nothing refers to.")
    def delete_object(name: Name, project: Project, as_json: JsonOption = False) -> None:
        with reported(as_json=as_json), catalog_session() as session:
            service(session).delete(project, name)
        typer.echo(f"deleted {kind} '{name}'")

    return commands


resource_specs_app = named_object_commands(
    kind="resource spec",
    plural="resource specs",
    service=lambda session: ResourceSpecs(session, cli_scope()),
    view=ResourceSpecView,
    columns=["name", "kind", "cpu", "memory_mib", "gpu_count", "gpu_type", "max_nodes"],
)
CodeOption = Annotated[
    Path | None,
    typer.Option(
        "--code",
        exists=True,
        file_okay=False,
        help="The algorithm's code folder: uploaded as its next code version; the command "
        "runs in it (CODE).",
    ),
]
CodeFolder = Annotated[
    Path, typer.Argument(exists=True, file_okay=False, help="The code folder to upload.")
]


def _algorithm_codes(session: Session) -> AlgorithmCodes:
    return AlgorithmCodes(
        session, cli_scope(), default_object_store(), max_bytes=get_settings().max_code_bytes
    )


def _code_files(folder: Path) -> dict[str, Path]:
    return folder_files(folder, max_bytes=get_settings().max_code_bytes)


def create_algorithm(
    file: FileOption, project: Project, code: CodeOption = None, as_json: JsonOption = False
) -> None:
    """The algorithm and, with ``--code``, its code version 1: both or neither."""
    with reported(as_json=as_json), catalog_session() as session:
        document = load_document(file)
        if code is None:
            row = Algorithms(session, cli_scope(), default_object_store()).create(project, document)
        else:
            row = _algorithm_codes(session).create_algorithm(project, document, _code_files(code))
        show(AlgorithmView.of(row), as_json=as_json)


algorithms_app = named_object_commands(
    kind="algorithm",
    plural="algorithms",
    service=lambda session: Algorithms(session, cli_scope(), default_object_store()),
    view=AlgorithmView,
    columns=["name", "algorithm_type", "image", "sample_type", "description"],
    create=create_algorithm,
)
algorithm_code_app = typer.Typer(
    help="An algorithm's uploaded code: one version per upload; a task keeps its version.",
    no_args_is_help=True,
)
algorithms_app.add_typer(algorithm_code_app, name="code")
CODE_COLUMNS = ["version", "file_count", "size_bytes", "content_digest", "uploaded_by",
                "created_at"]  # fmt: skip


@algorithm_code_app.command("upload", help="Upload a folder as the next code version.")
def upload_algorithm_code(
    algorithm: Name, folder: CodeFolder, project: Project, as_json: JsonOption = False
) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        row = _algorithm_codes(session).upload(project, algorithm, _code_files(folder))
        show(AlgorithmCodeView.of(row), as_json=as_json)


@algorithm_code_app.command("list")
def list_algorithm_code(algorithm: Name, project: Project, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        rows = [
            AlgorithmCodeView.of(row) for row in _algorithm_codes(session).list(project, algorithm)
        ]
        show_list(rows, CODE_COLUMNS, as_json=as_json)


@algorithm_code_app.command("show", help="One code version with its files.")
def show_algorithm_code(
    algorithm: Name, version: int, project: Project, as_json: JsonOption = False
) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        row = _algorithm_codes(session).get(project, algorithm, version)
        show(AlgorithmCodeFilesView.of(row), as_json=as_json)


datasets_app = named_object_commands(
    kind="dataset",
    plural="datasets",
    service=lambda session: Datasets(session, cli_scope(), default_object_store()),
    view=DatasetView,
    columns=["name", "sample_type", "annotation_status", "versions"],
)
repositories_app = named_object_commands(
    kind="model repository",
    plural="model repositories",
    service=lambda session: ModelRepositories(session, cli_scope(), default_object_store()),
    view=ModelRepositoryView,
    columns=["name", "description", "versions"],
)

# ---- dataset versions -----------------------------------------------------------------------

dataset_versions_app = typer.Typer(help="Versions of a dataset.", no_args_is_help=True)
datasets_app.add_typer(dataset_versions_app, name="version")
VERSION_COLUMNS = ["version", "status", "file_count", "size_bytes", "created_at"]


def _dataset_versions(session: Session) -> DatasetVersions:
    return DatasetVersions(session, cli_scope(), default_object_store())


@dataset_versions_app.command("list")
def list_dataset_versions(dataset: Name, project: Project, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        rows = [
            DatasetVersionView.of(row)
            for row in every_item(partial(_dataset_versions(session).page, project, dataset))
        ]
        show_list(rows, VERSION_COLUMNS, as_json=as_json)


@dataset_versions_app.command("import", help="Import files as a version awaiting release.")
def import_dataset_version(
    dataset: Name, version: str, source: FromPath, project: Project, as_json: JsonOption = False
) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        row = _dataset_versions(session).create(
            project, dataset, {"version": version}, files_of(source)
        )
        show(DatasetVersionView.of(row), as_json=as_json)


@dataset_versions_app.command("publish")
def publish_dataset_version(
    dataset: Name, version: str, project: Project, as_json: JsonOption = False
) -> None:
    """Tasks that retrain on the dataset start a run (an event of its Airflow Asset, sent
    through Airflow's REST API once the version is published)."""
    with reported(as_json=as_json), catalog_session() as session:
        row = _dataset_versions(session).publish(
            project, dataset, version, on_published=_announce_over_rest
        )
        show(DatasetVersionView.of(row), as_json=as_json)


def _announce_over_rest(version: PublishedVersion) -> None:
    uri = dataset_asset_uri(version.project, version.dataset)
    try:
        airflow = AirflowRestClient.from_settings(get_settings())
        if airflow.announce_asset(uri, published_event_extra(version)):
            typer.echo(f"retraining on {version.dataset} started in Airflow", err=True)
    except AirflowApiError as error:
        typer.echo(f"warning: published, but Airflow was not told ({error}); tasks that "
                   "retrain on this dataset did not start", err=True)  # fmt: skip


@dataset_versions_app.command("delete")
def delete_dataset_version(
    dataset: Name, version: str, project: Project, as_json: JsonOption = False
) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        _dataset_versions(session).delete(project, dataset, version)
    typer.echo(f"deleted dataset version '{dataset}' {version}")


# ---- data caches ----------------------------------------------------------------------------

caches_app = typer.Typer(help=help_of("cache"))
CACHE_COLUMNS = ["name", "dataset", "version", "status", "expires_at", "size_bytes"]


def _caches(session: Session) -> DataCaches:
    return DataCaches(session, cli_scope(), default_object_store())


@caches_app.command("list")
def list_caches(project: Project, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        rows = [
            DataCacheView.of(row) for row in every_item(partial(_caches(session).page, project))
        ]
        show_list(rows, CACHE_COLUMNS, as_json=as_json)


@caches_app.command("show")
def show_cache(name: Name, project: Project, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        show(DataCacheView.of(_caches(session).get(project, name)), as_json=as_json)


@caches_app.command(
    "create", help="Ask for a cache of a dataset version (name, dataset, version, ttl_hours)."
)
def create_cache(file: FileOption, project: Project, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        row = _caches(session).create(project, load_document(file))
        show(DataCacheView.of(row), as_json=as_json)


@caches_app.command(
    "fill", help="Run the data-cache job here: copy every cache that is caching or to refresh."
)
def fill_caches(as_json: JsonOption = False) -> None:
    settings = get_settings()
    hook = CatalogHook(settings.catalog_url)
    try:
        with reported(as_json=as_json):
            filled = fill_waiting_caches(hook.session, default_object_store())
            show_list(filled, [*CACHE_COLUMNS, "message"], as_json=as_json)
    finally:
        hook.dispose()


@caches_app.command("refresh", help="Ask for a new copy; the copy in use stays usable.")
def refresh_cache(
    name: Name,
    project: Project,
    ttl_hours: Annotated[int | None, typer.Option(help="New lifetime in hours.")] = None,
    as_json: JsonOption = False,
) -> None:
    document = {} if ttl_hours is None else {"ttl_hours": ttl_hours}
    with reported(as_json=as_json), catalog_session() as session:
        show(DataCacheView.of(_caches(session).refresh(project, name, document)), as_json=as_json)


@caches_app.command("delete")
def delete_cache(name: Name, project: Project, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        _caches(session).delete(project, name)
    typer.echo(f"deleted data cache '{name}'")


# ---- model versions -------------------------------------------------------------------------

model_versions_app = typer.Typer(help="Versions of a model repository.", no_args_is_help=True)
repositories_app.add_typer(model_versions_app, name="version")
MODEL_VERSION_COLUMNS = ["version", "status", "source", "file_count", "size_bytes", "created_at"]


def _model_versions(session: Session) -> ModelVersions:
    return ModelVersions(session, cli_scope(), default_object_store())


@model_versions_app.command("list")
def list_model_versions(repository: Name, project: Project, as_json: JsonOption = False) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        rows = [
            ModelVersionView.of(row)
            for row in every_item(partial(_model_versions(session).page, project, repository))
        ]
        show_list(rows, MODEL_VERSION_COLUMNS, as_json=as_json)


@model_versions_app.command("show", help="One version, with its lineage.")
def show_model_version(
    repository: Name, version: int, project: Project, as_json: JsonOption = False
) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        row = _model_versions(session).get(project, repository, version)
        show(ModelVersionView.of(row), as_json=as_json)


@model_versions_app.command("import", help="Import files as the repository's next version.")
def import_model_version(
    repository: Name,
    source: FromPath,
    project: Project,
    description: Annotated[str, typer.Option(help="What the model is.")] = "",
    as_json: JsonOption = False,
) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        row = _model_versions(session).import_files(
            project, repository, {"description": description}, files_of(source)
        )
        show(ModelVersionView.of(row), as_json=as_json)


@model_versions_app.command("delete")
def delete_model_version(
    repository: Name, version: int, project: Project, as_json: JsonOption = False
) -> None:
    with reported(as_json=as_json), catalog_session() as session:
        _model_versions(session).delete(project, repository, version)
    typer.echo(f"deleted model version '{repository}' {version}")
