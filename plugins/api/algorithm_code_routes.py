"""An algorithm's code over REST: upload its folder (its files one by one, each part's file
name its path, or one zip) as the next version, list the versions, show one with its files,
download a file or the whole version as a zip.

A refused upload (a path leaving the folder, a link, a file over the bound, an empty upload)
leaves no version and no object behind; the services decide, these routes translate HTTP.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path as LocalPath
from typing import Annotated, Any

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, File, UploadFile
from sqlalchemy.orm import Session

from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.access import Scope
from octotrain.catalog.algorithm_code import AlgorithmCodes
from octotrain.catalog.views import AlgorithmCodeFilesView, AlgorithmCodeView
from octotrain.code_folders import check_total, unpacked_zip
from octotrain.errors import InvalidInput
from octotrain.settings import get_settings
from plugins.api.auth import CurrentScope
from plugins.api.catalog_routes import ObjectName, ProjectName, VersionNumber
from plugins.api.paging import collection_of
from plugins.api.stored_file_routes import add_stored_file_routes
from plugins.api.uploads import CHUNK, saved_uploads

CODE = "/projects/{project}/algorithms/{algorithm}/code"
Files = Annotated[
    list[UploadFile] | None,
    File(description="The folder's files; each part's file name is its path in the folder."),
]
Archive = Annotated[
    UploadFile | None,
    File(description="The folder as one zip (a single top folder in it is taken off)."),
]
AlgorithmCodeCollection = collection_of("code_versions", AlgorithmCodeView)

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(dependencies=[Depends(get_user)])


def algorithm_codes(session: Session, scope: Scope) -> AlgorithmCodes:
    """The service with this deployment's store and bound (``max_code_mb``)."""
    return AlgorithmCodes(
        session, scope, default_object_store(), max_bytes=get_settings().max_code_bytes
    )


@contextmanager
def uploaded_code(
    files: list[UploadFile] | None, archive: UploadFile | None
) -> Iterator[tuple[dict[str, LocalPath], str]]:
    """The upload as {path in the folder: local file} and the field it came in, checked
    against the bound before the store sees it."""
    given = [name for name, value in (("files", files), ("archive", archive)) if value]
    if len(given) != 1:
        raise InvalidInput.one(
            "files", "give the code as files or as one zip ('archive'), one of the two"
        )
    limit = get_settings().max_code_bytes
    if files:
        with saved_uploads(files) as saved:
            check_total(saved, max_bytes=limit, field="files")
            yield saved, "files"
        return
    assert archive is not None
    with tempfile.TemporaryDirectory(prefix="octotrain-code-") as scratch:
        zipped = LocalPath(scratch, "upload.zip")
        with zipped.open("wb") as handle:
            shutil.copyfileobj(archive.file, handle, CHUNK)
        unpacked = LocalPath(scratch, "files")
        unpacked.mkdir()
        yield unpacked_zip(zipped, unpacked, max_bytes=limit, field="archive"), "archive"


@router.post(
    CODE,
    status_code=201,
    tags=["algorithms"],
    summary="Upload the algorithm's code folder (files or one zip) as its next version",
)
def upload_algorithm_code(
    project: ProjectName,
    algorithm: ObjectName,
    scope: CurrentScope,
    files: Files = None,
    archive: Archive = None,
) -> AlgorithmCodeView:
    """Saved tasks keep the version they were saved with; a task saved from now on runs this
    one (unless it names another ``code_version``)."""
    with uploaded_code(files, archive) as (saved, field), default_catalog().session() as session:
        row = algorithm_codes(session, scope).upload(project, algorithm, saved, field=field)
        return AlgorithmCodeView.of(row)


@router.get(
    CODE,
    tags=["algorithms"],
    summary="The algorithm's code versions, oldest first",
    response_model=AlgorithmCodeCollection,
)
def list_algorithm_code(project: ProjectName, algorithm: ObjectName, scope: CurrentScope) -> Any:
    with default_catalog().session() as session:
        rows = algorithm_codes(session, scope).list(project, algorithm)
        return AlgorithmCodeCollection(
            code_versions=[AlgorithmCodeView.of(row) for row in rows], total_entries=len(rows)
        )


@router.get(f"{CODE}/{{version}}", tags=["algorithms"], summary="One code version, its files")
def get_algorithm_code(
    project: ProjectName, algorithm: ObjectName, version: VersionNumber, scope: CurrentScope
) -> AlgorithmCodeFilesView:
    with default_catalog().session() as session:
        row = algorithm_codes(session, scope).get(project, algorithm, version)
        return AlgorithmCodeFilesView.of(row)


add_stored_file_routes(
    router,
    versions=CODE,
    version=VersionNumber,
    service=algorithm_codes,
    name="algorithm_code",
    kind="code version",
    what="{algorithm} code v{version}",
    zip_name="{algorithm}-code-v{version}",
)
