"""Lineage the other way round over REST: the tasks and runs that used a model version as an
input model (``GET …/versions/{version}`` answers what the version was made from and which
versions were trained from it)."""

from __future__ import annotations

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends

from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.usage import ModelVersionUsers, model_version_users
from plugins.api.auth import CurrentScope
from plugins.api.catalog_routes import MODEL_VERSIONS, ObjectName, ProjectName, VersionNumber

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(dependencies=[Depends(get_user)])


@router.get(
    f"{MODEL_VERSIONS}/{{version}}/used-by",
    tags=["model-repositories"],
    summary="The tasks that name a model version as an input model and the runs launched with it",
)
def model_version_used_by(
    project: ProjectName, repository: ObjectName, version: VersionNumber, scope: CurrentScope
) -> ModelVersionUsers:
    with default_catalog().session() as session:
        row = ModelVersions(session, scope, default_object_store()).get(
            project, repository, version
        )
        return model_version_users(session, row)
