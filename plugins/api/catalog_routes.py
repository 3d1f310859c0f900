"""Catalog management over REST: projects and members, and inside a project its resource
specs, algorithms, datasets and their versions, data caches, model repositories and versions.

Every route runs the catalog service for the requesting user's scope in one transaction;
the services decide, these routes only translate HTTP.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Body, Depends, File, Form, Path, Response, UploadFile
from sqlalchemy.orm import Session

from hooks.airflow.dataset_assets import announce_published
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.access import Scope
from octotrain.catalog.data_caches import DataCaches
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.catalog.documents import (
    AlgorithmDocument,
    CacheRefreshDocument,
    DataCacheDocument,
    DatasetDocument,
    MemberDocument,
    ModelRepositoryDocument,
    ProjectDocument,
    ResourceSpecDocument,
)
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.named_objects import (
    Algorithms,
    Datasets,
    ModelRepositories,
    NamedObjects,
    ResourceSpecs,
)
from octotrain.catalog.projects import Projects
from octotrain.catalog.views import (
    AlgorithmView,
    DataCacheView,
    DatasetVersionView,
    DatasetView,
    ModelRepositoryView,
    ModelVersionView,
    ProjectView,
    ResourceSpecView,
)
from octotrain.task_spec import MAX_VERSION_NUMBER
from plugins.api.auth import CurrentScope
from plugins.api.bodies import json_body
from plugins.api.paging import CurrentWindow, collection_of
from plugins.api.uploads import saved_uploads

# Path parameters: longer or stranger names than the catalog allows cannot exist, so they
# are refused before any query.
ProjectName = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f/]+$")]
ObjectName = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f/]+$")]
VersionName = Annotated[str, Path(min_length=1, max_length=32, pattern=r"^[^\x00-\x1f/]+$")]
VersionNumber = Annotated[int, Path(ge=1, le=MAX_VERSION_NUMBER)]
# Any name a member can be added with (octotrain.documents.PlainText: tabs and line breaks
# allowed), '/' included: the route takes the rest of the path.
Username = Annotated[str, Path(min_length=1, max_length=256, pattern=r"^[^\x00-\x08\x0b-\x1f]+$")]
Document = Annotated[Any, Body()]
Uploads = Annotated[list[UploadFile], File(description="Each part's file name is its path.")]

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(dependencies=[Depends(get_user)])


def _store_services(factory: Callable[..., Any]) -> Callable[[Session, Scope], Any]:
    return lambda session, scope: factory(session, scope, default_object_store())


# ---- projects ------------------------------------------------------------------------------


ProjectCollection = collection_of("projects", ProjectView)


@router.get(
    "/projects",
    tags=["projects"],
    summary="The projects you are a member of",
    response_model=ProjectCollection,
)
def list_projects(scope: CurrentScope, window: CurrentWindow) -> Any:
    with default_catalog().session() as session:
        page = Projects(session, scope).page(window)
        return ProjectCollection(
            projects=[ProjectView.of(row) for row in page.items], total_entries=page.total
        )


@router.post(
    "/projects",
    status_code=201,
    tags=["projects"],
    summary="Create a project (administrators)",
    openapi_extra=json_body(ProjectDocument),
)
def create_project(scope: CurrentScope, document: Document) -> ProjectView:
    with default_catalog().session() as session:
        return ProjectView.of(Projects(session, scope).create(document))


@router.get("/projects/{project}", tags=["projects"], summary="One project")
def get_project(project: ProjectName, scope: CurrentScope) -> ProjectView:
    with default_catalog().session() as session:
        return ProjectView.of(Projects(session, scope).get(project))


@router.patch(
    "/projects/{project}",
    tags=["projects"],
    summary="Change a project (administrators)",
    openapi_extra=json_body(ProjectDocument, partial=True),
)
def update_project(project: ProjectName, scope: CurrentScope, document: Document) -> ProjectView:
    with default_catalog().session() as session:
        return ProjectView.of(Projects(session, scope).update(project, document))


@router.delete(
    "/projects/{project}",
    status_code=204,
    tags=["projects"],
    summary="Delete an empty project (administrators)",
)
def delete_project(project: ProjectName, scope: CurrentScope) -> Response:
    with default_catalog().session() as session:
        Projects(session, scope).delete(project)
    return Response(status_code=204)


@router.post(
    "/projects/{project}/members",
    tags=["projects"],
    summary="Add a member (administrators)",
    openapi_extra=json_body(MemberDocument),
)
def add_member(project: ProjectName, scope: CurrentScope, document: Document) -> ProjectView:
    with default_catalog().session() as session:
        return ProjectView.of(Projects(session, scope).add_member(project, document))


@router.delete(
    "/projects/{project}/members/{username:path}",
    tags=["projects"],
    summary="Remove a member (administrators)",
)
def remove_member(project: ProjectName, username: Username, scope: CurrentScope) -> ProjectView:
    with default_catalog().session() as session:
        return ProjectView.of(Projects(session, scope).remove_member(project, username))


# ---- objects named within a project -------------------------------------------------------


def add_named_object_routes(
    *,
    collection: str,
    kind: str,
    service: Callable[[Session, Scope], NamedObjects[Any]],
    view: Any,
    document: type,
) -> None:
    """list / create / get / change / delete routes for one kind of named object."""
    slug = collection.replace("-", "_")
    base = f"/projects/{{project}}/{collection}"

    listed = collection_of(slug, view)

    def list_objects(project: ProjectName, scope: CurrentScope, window: CurrentWindow) -> Any:
        with default_catalog().session() as session:
            page = service(session, scope).page(project, window)
            return listed(**{slug: [view.of(row) for row in page.items]},
                          total_entries=page.total)  # fmt: skip

    def create_object(project: ProjectName, scope: CurrentScope, body: Document) -> Any:
        with default_catalog().session() as session:
            return view.of(service(session, scope).create(project, body))

    def get_object(project: ProjectName, name: ObjectName, scope: CurrentScope) -> Any:
        with default_catalog().session() as session:
            return view.of(service(session, scope).get(project, name))

    def update_object(
        project: ProjectName, name: ObjectName, scope: CurrentScope, body: Document
    ) -> Any:
        with default_catalog().session() as session:
            return view.of(service(session, scope).update(project, name, body))

    def delete_object(project: ProjectName, name: ObjectName, scope: CurrentScope) -> Response:
        with default_catalog().session() as session:
            service(session, scope).delete(project, name)
        return Response(status_code=204)

    routes: list[tuple[str, Callable[..., Any], str, dict[str, Any]]] = [
        (base, list_objects, "GET", {"response_model": listed, "name": f"list_{slug}",
         "summary": f"List the project's {collection.replace('-', ' ')}"}),
        (base, create_object, "POST", {"response_model": view, "status_code": 201,
         "name": f"create_{slug}", "summary": f"Create a {kind}",
         "openapi_extra": json_body(document)}),
        (f"{base}/{{name}}", get_object, "GET", {"response_model": view,
         "name": f"get_{slug}", "summary": f"One {kind}"}),
        (f"{base}/{{name}}", update_object, "PATCH", {"response_model": view,
         "name": f"update_{slug}", "summary": f"Change a {kind}",
         "openapi_extra": json_body(document, partial=True)}),
        (f"{base}/{{name}}", delete_object, "DELETE", {"status_code": 204,
         "name": f"delete_{slug}", "summary": f"Delete a {kind} nothing refers to"}),
    ]  # fmt: skip
    for path, endpoint, method, options in routes:
        router.add_api_route(path, endpoint, methods=[method], tags=[collection], **options)


add_named_object_routes(
    collection="resource-specs",
    kind="resource spec",
    service=ResourceSpecs,
    view=ResourceSpecView,
    document=ResourceSpecDocument,
)
add_named_object_routes(
    collection="algorithms",
    kind="algorithm",
    service=_store_services(Algorithms),
    view=AlgorithmView,
    document=AlgorithmDocument,
)
add_named_object_routes(
    collection="datasets",
    kind="dataset",
    service=_store_services(Datasets),
    view=DatasetView,
    document=DatasetDocument,
)
add_named_object_routes(
    collection="model-repositories",
    kind="model repository",
    service=_store_services(ModelRepositories),
    view=ModelRepositoryView,
    document=ModelRepositoryDocument,
)


# ---- dataset versions -----------------------------------------------------------------------

DATASET_VERSIONS = "/projects/{project}/datasets/{dataset}/versions"


def _versions(session: Session, scope: Scope) -> DatasetVersions:
    return DatasetVersions(session, scope, default_object_store())


DatasetVersionCollection = collection_of("dataset_versions", DatasetVersionView)


@router.get(
    DATASET_VERSIONS,
    tags=["datasets"],
    summary="The versions of a dataset",
    response_model=DatasetVersionCollection,
)
def list_dataset_versions(
    project: ProjectName, dataset: ObjectName, scope: CurrentScope, window: CurrentWindow
) -> Any:
    with default_catalog().session() as session:
        page = _versions(session, scope).page(project, dataset, window)
        return DatasetVersionCollection(
            dataset_versions=[DatasetVersionView.of(row) for row in page.items],
            total_entries=page.total,
        )


@router.post(
    DATASET_VERSIONS,
    status_code=201,
    tags=["datasets"],
    summary="Import files as a new version (awaiting release until published)",
)
def import_dataset_version(
    project: ProjectName,
    dataset: ObjectName,
    scope: CurrentScope,
    version: Annotated[str, Form(min_length=1, max_length=32)],
    files: Uploads,
) -> DatasetVersionView:
    with saved_uploads(files) as saved, default_catalog().session() as session:
        row = _versions(session, scope).create(project, dataset, {"version": version}, saved)
        return DatasetVersionView.of(row)


@router.get(f"{DATASET_VERSIONS}/{{version}}", tags=["datasets"], summary="One dataset version")
def get_dataset_version(
    project: ProjectName, dataset: ObjectName, version: VersionName, scope: CurrentScope
) -> DatasetVersionView:
    with default_catalog().session() as session:
        return DatasetVersionView.of(_versions(session, scope).get(project, dataset, version))


@router.post(
    f"{DATASET_VERSIONS}/{{version}}/publish", tags=["datasets"], summary="Publish a version"
)
def publish_dataset_version(
    project: ProjectName, dataset: ObjectName, version: VersionName, scope: CurrentScope
) -> DatasetVersionView:
    """Tasks that retrain on the dataset start a run once the version is published (the
    dataset's Airflow Asset gets an event)."""
    with default_catalog().session() as session:
        row = _versions(session, scope).publish(
            project, dataset, version, on_published=announce_published
        )
        return DatasetVersionView.of(row)


@router.delete(
    f"{DATASET_VERSIONS}/{{version}}",
    status_code=204,
    tags=["datasets"],
    summary="Delete a version nothing refers to",
)
def delete_dataset_version(
    project: ProjectName, dataset: ObjectName, version: VersionName, scope: CurrentScope
) -> Response:
    with default_catalog().session() as session:
        _versions(session, scope).delete(project, dataset, version)
    return Response(status_code=204)


# ---- data caches ----------------------------------------------------------------------------

CACHES = "/projects/{project}/caches"


def _caches(session: Session, scope: Scope) -> DataCaches:
    return DataCaches(session, scope, default_object_store())


CacheCollection = collection_of("caches", DataCacheView)


@router.get(
    CACHES, tags=["caches"], summary="The data caches of a project", response_model=CacheCollection
)
def list_caches(project: ProjectName, scope: CurrentScope, window: CurrentWindow) -> Any:
    with default_catalog().session() as session:
        page = _caches(session, scope).page(project, window)
        return CacheCollection(
            caches=[DataCacheView.of(row) for row in page.items], total_entries=page.total
        )


@router.post(
    CACHES,
    status_code=201,
    tags=["caches"],
    summary="Cache a dataset version (caching until the data-cache job has copied it)",
    openapi_extra=json_body(DataCacheDocument),
)
def create_cache(project: ProjectName, scope: CurrentScope, document: Document) -> DataCacheView:
    with default_catalog().session() as session:
        return DataCacheView.of(_caches(session, scope).create(project, document))


@router.get(f"{CACHES}/{{name}}", tags=["caches"], summary="One data cache")
def get_cache(project: ProjectName, name: ObjectName, scope: CurrentScope) -> DataCacheView:
    with default_catalog().session() as session:
        return DataCacheView.of(_caches(session, scope).get(project, name))


@router.post(
    f"{CACHES}/{{name}}/refresh",
    status_code=202,
    tags=["caches"],
    summary="Ask the data-cache job to copy the version again (the copy in use stays usable)",
    openapi_extra=json_body(CacheRefreshDocument, required=False),
)
def refresh_cache(
    project: ProjectName, name: ObjectName, scope: CurrentScope, document: Document = None
) -> DataCacheView:
    """Without a body the cache keeps its ``ttl_hours``."""
    with default_catalog().session() as session:
        changes = {} if document is None else document
        return DataCacheView.of(_caches(session, scope).refresh(project, name, changes))


@router.delete(
    f"{CACHES}/{{name}}", status_code=204, tags=["caches"], summary="Delete an unused data cache"
)
def delete_cache(project: ProjectName, name: ObjectName, scope: CurrentScope) -> Response:
    with default_catalog().session() as session:
        _caches(session, scope).delete(project, name)
    return Response(status_code=204)


# ---- model versions -------------------------------------------------------------------------

MODEL_VERSIONS = "/projects/{project}/model-repositories/{repository}/versions"


def _models(session: Session, scope: Scope) -> ModelVersions:
    return ModelVersions(session, scope, default_object_store())


ModelVersionCollection = collection_of("model_versions", ModelVersionView)


@router.get(
    MODEL_VERSIONS,
    tags=["model-repositories"],
    summary="The versions of a repository",
    response_model=ModelVersionCollection,
)
def list_model_versions(
    project: ProjectName, repository: ObjectName, scope: CurrentScope, window: CurrentWindow
) -> Any:
    with default_catalog().session() as session:
        page = _models(session, scope).page(project, repository, window)
        return ModelVersionCollection(
            model_versions=[ModelVersionView.of(row) for row in page.items],
            total_entries=page.total,
        )


@router.post(
    MODEL_VERSIONS,
    status_code=201,
    tags=["model-repositories"],
    summary="Import files as the repository's next version",
)
def import_model_version(
    project: ProjectName,
    repository: ObjectName,
    scope: CurrentScope,
    files: Uploads,
    description: Annotated[str, Form(max_length=256)] = "",
) -> ModelVersionView:
    with saved_uploads(files) as saved, default_catalog().session() as session:
        row = _models(session, scope).import_files(
            project, repository, {"description": description}, saved
        )
        return ModelVersionView.of(row)


@router.get(
    f"{MODEL_VERSIONS}/{{version}}",
    tags=["model-repositories"],
    summary="One model version with its lineage",
)
def get_model_version(
    project: ProjectName, repository: ObjectName, version: VersionNumber, scope: CurrentScope
) -> ModelVersionView:
    with default_catalog().session() as session:
        return ModelVersionView.of(_models(session, scope).get(project, repository, version))


@router.delete(
    f"{MODEL_VERSIONS}/{{version}}",
    status_code=204,
    tags=["model-repositories"],
    summary="Delete a version nothing refers to",
)
def delete_model_version(
    project: ProjectName, repository: ObjectName, version: VersionNumber, scope: CurrentScope
) -> Response:
    with default_catalog().session() as session:
        _models(session, scope).delete(project, repository, version)
    return Response(status_code=204)
