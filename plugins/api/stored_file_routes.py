"""The files of a model version or a dataset version (and, through ``one_file`` and
``all_files``, of an algorithm's code version), over REST: each one downloaded as it is
stored, or all of them as one zip, both streamed from the object store. Only the files the
version's manifest lists can be asked for (a path is never passed to the store unchecked);
what a version holds is listed by its own view (``files``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated
from urllib.parse import quote

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Path
from fastapi.responses import StreamingResponse

from hooks.catalog import default_catalog
from hooks.object_store import default_object_store
from hooks.zip_stream import ZipMember, zip_chunks
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.models import StoredFiles
from octotrain.errors import NotFound
from plugins.api.auth import CurrentScope
from plugins.api.catalog_routes import (
    DATASET_VERSIONS,
    MODEL_VERSIONS,
    ObjectName,
    ProjectName,
    VersionName,
    VersionNumber,
)

# A file's path inside its version, as its manifest names it.
FilePath = Annotated[str, Path(min_length=1, max_length=1024, pattern=r"^[^\x00-\x1f]+$")]

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(dependencies=[Depends(get_user)])


def one_file(files: StoredFiles, path: str, what: str) -> StreamingResponse:
    """The file ``path`` of a version, if its manifest lists it."""
    if path not in files.manifest:
        raise NotFound(f"{what} has no file {path!r}")
    store = default_object_store()
    return StreamingResponse(
        store.iter_bytes(f"{files.object_prefix}/{path}"),
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": _attachment(path.rsplit("/", 1)[-1]),
            "Content-Length": str(files.manifest[path]["size"]),
        },
    )


def all_files(files: StoredFiles, name: str) -> StreamingResponse:
    """Every file of a version as the zip ``name``.zip."""
    store = default_object_store()
    prefix, modified = files.object_prefix, files.created_at.timestamp()

    def members() -> Iterator[ZipMember]:
        for path in sorted(files.manifest):
            yield ZipMember(path, modified, store.iter_bytes(f"{prefix}/{path}"))

    return StreamingResponse(
        zip_chunks(members(), deflate=False),
        media_type="application/zip",
        headers={"Content-Disposition": _attachment(f"{name}.zip")},
    )


def _attachment(name: str) -> str:
    """A Content-Disposition for any file name (RFC 6266: an ASCII fallback and UTF-8)."""
    fallback = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name
    )
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


@router.get(
    f"{MODEL_VERSIONS}/{{version}}/files/{{path:path}}",
    tags=["model-repositories"],
    summary="One file of a model version (streamed)",
    response_class=StreamingResponse,
)
def model_version_file(
    project: ProjectName,
    repository: ObjectName,
    version: VersionNumber,
    path: FilePath,
    scope: CurrentScope,
) -> StreamingResponse:
    with default_catalog().session() as session:
        row = ModelVersions(session, scope, default_object_store()).get(
            project, repository, version
        )
        return one_file(row, path, f"{repository} v{version}")


@router.get(
    f"{MODEL_VERSIONS}/{{version}}/download",
    tags=["model-repositories"],
    summary="Every file of a model version as one zip (streamed)",
    response_class=StreamingResponse,
)
def model_version_zip(
    project: ProjectName, repository: ObjectName, version: VersionNumber, scope: CurrentScope
) -> StreamingResponse:
    with default_catalog().session() as session:
        row = ModelVersions(session, scope, default_object_store()).get(
            project, repository, version
        )
        return all_files(row, f"{repository}-v{version}")


@router.get(
    f"{DATASET_VERSIONS}/{{version}}/files/{{path:path}}",
    tags=["datasets"],
    summary="One file of a dataset version (streamed)",
    response_class=StreamingResponse,
)
def dataset_version_file(
    project: ProjectName,
    dataset: ObjectName,
    version: VersionName,
    path: FilePath,
    scope: CurrentScope,
) -> StreamingResponse:
    with default_catalog().session() as session:
        row = DatasetVersions(session, scope, default_object_store()).get(project, dataset, version)
        return one_file(row, path, f"dataset {dataset} {version}")


@router.get(
    f"{DATASET_VERSIONS}/{{version}}/download",
    tags=["datasets"],
    summary="Every file of a dataset version as one zip (streamed)",
    response_class=StreamingResponse,
)
def dataset_version_zip(
    project: ProjectName, dataset: ObjectName, version: VersionName, scope: CurrentScope
) -> StreamingResponse:
    with default_catalog().session() as session:
        row = DatasetVersions(session, scope, default_object_store()).get(project, dataset, version)
        return all_files(row, f"{dataset}-{version}")
