"""The files of a version stored in the object store (a model version, a dataset version, an
algorithm's code version), over REST: each one downloaded as it is stored, or all of them as
one zip, both streamed from the object store. Only the files the version's manifest lists can
be asked for (a path is never passed to the store unchecked); what a version holds is listed
by its own view. ``add_stored_file_routes`` makes the two routes for each kind of version."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Annotated, Any
from urllib.parse import quote

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Path
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from hooks.storage.zip_stream import ZipMember, zip_chunks
from octotrain.catalog.access import Scope
from octotrain.catalog.dataset_versions import DatasetVersions
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.models import StoredFiles
from octotrain.catalog.stored_versions import StoredVersions
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


def add_stored_file_routes(
    router: APIRouter,
    *,
    versions: str,
    version: Any,
    service: Callable[[Session, Scope], StoredVersions[Any, Any]],
    name: str,
    kind: str,
    what: str,
    zip_name: str,
) -> None:
    """One file (``…/{version}/files/{path}``) and every file as a zip (``…/download``) of
    the ``versions`` of one kind, on ``router``; ``version`` is the type of a version's path
    parameter, ``what`` (a missing file's message) and ``zip_name`` are formatted with the
    path parameters. The URL names the routes' tag and the owner's path parameter
    (``/projects/{project}/<tag>/{<owner>}/…``); the endpoints declare their parameters by
    their signatures (which FastAPI reads), since the owner's differs by kind."""
    tag, owner = (part.strip("{}") for part in versions.split("/")[3:5])

    def found(session: Session, given: dict[str, Any]) -> StoredFiles:
        return service(session, given["scope"]).get(
            given["project"], given[owner], given["version"]
        )

    def file(**given: Any) -> StreamingResponse:
        with default_catalog().session() as session:
            return one_file(found(session, given), given["path"], what.format(**given))

    def download(**given: Any) -> StreamingResponse:
        with default_catalog().session() as session:
            return all_files(found(session, given), zip_name.format(**given))

    keys = {"project": ProjectName, owner: ObjectName, "version": version}
    routes = [
        (file, "file", "files/{path:path}", {**keys, "path": FilePath}, "One file of a {}"),
        (download, "zip", "download", keys, "Every file of a {} as one zip"),
    ]
    for endpoint, suffix, tail, parameters, summary in routes:
        endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [
                inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=annotation)
                for key, annotation in {**parameters, "scope": CurrentScope}.items()
            ],
            return_annotation=StreamingResponse,
        )
        router.add_api_route(
            f"{versions}/{{version}}/{tail}",
            endpoint,
            methods=["GET"],
            name=f"{name}_{suffix}",
            tags=[tag],
            summary=f"{summary.format(kind)} (streamed)",
            response_class=StreamingResponse,
        )


def _attachment(name: str) -> str:
    """A Content-Disposition for any file name (RFC 6266: an ASCII fallback and UTF-8)."""
    fallback = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name
    )
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


add_stored_file_routes(
    router,
    versions=MODEL_VERSIONS,
    version=VersionNumber,
    service=lambda session, scope: ModelVersions(session, scope, default_object_store()),
    name="model_version",
    kind="model version",
    what="{repository} v{version}",
    zip_name="{repository}-v{version}",
)
add_stored_file_routes(
    router,
    versions=DATASET_VERSIONS,
    version=VersionName,
    service=lambda session, scope: DatasetVersions(session, scope, default_object_store()),
    name="dataset_version",
    kind="dataset version",
    what="dataset {dataset} {version}",
    zip_name="{dataset}-{version}",
)
