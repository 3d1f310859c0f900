"""The plugin's REST API and pages, mounted in Airflow's api-server under ``/octotrain``.

Every route depends on Airflow's ``get_user`` (router-wide, so a new route cannot forget it):
without an Airflow token or session cookie it answers 401. The pages (``plugins/ui``) depend on
it the same way, and so do the OpenAPI document (``/octotrain/openapi.json``) and the
interactive one (``/octotrain/docs``), which FastAPI would otherwise serve to anyone.
"""

from __future__ import annotations

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, FastAPI

from octotrain.settings import get_settings
from plugins.api import (
    accounting_routes,
    algorithm_code_routes,
    catalog_routes,
    compare_routes,
    lineage_routes,
    log_routes,
    metrics_routes,
    openapi_routes,
    progress_routes,
    stored_file_routes,
    sweep_routes,
    task_routes,
)
from plugins.api.body_limit import BodyLimit
from plugins.api.errors import ERROR_RESPONSES, install_error_handlers
from plugins.ui import (
    accounting_pages,
    catalog_pages,
    compare_pages,
    manual_pages,
    pages,
    run_pages,
    sweep_pages,
)

API_PREFIX = "/api/v1"


def create_app() -> FastAPI:
    app = FastAPI(
        openapi_url=None,  # served by openapi_routes, behind the login
        docs_url=None,
        redoc_url=None,
        title="Octotrain",
        description=(
            "Training tasks, the catalog they use (projects, resource specs, algorithms, "
            "datasets, data caches, model repositories) and their runs. Authenticate with an "
            "Airflow token (`POST /auth/token` of the api-server) as `Authorization: Bearer`."
        ),
        version="1",
    )
    api = APIRouter(prefix=API_PREFIX, dependencies=[Depends(get_user)], responses=ERROR_RESPONSES)
    api.include_router(catalog_routes.router)
    api.include_router(lineage_routes.router)
    api.include_router(stored_file_routes.router)
    api.include_router(algorithm_code_routes.router)
    api.include_router(task_routes.router)
    api.include_router(sweep_routes.router)
    api.include_router(log_routes.router)
    api.include_router(metrics_routes.router)
    api.include_router(compare_routes.router)
    api.include_router(accounting_routes.router)
    api.include_router(progress_routes.router)
    app.include_router(api)
    app.include_router(openapi_routes.router)
    app.include_router(pages.router, dependencies=[Depends(get_user)])
    app.include_router(catalog_pages.router, dependencies=[Depends(get_user)])
    app.include_router(accounting_pages.router, dependencies=[Depends(get_user)])
    app.include_router(run_pages.router, dependencies=[Depends(get_user)])
    app.include_router(compare_pages.router, dependencies=[Depends(get_user)])
    app.include_router(sweep_pages.router, dependencies=[Depends(get_user)])
    app.include_router(manual_pages.router, dependencies=[Depends(get_user)])
    install_error_handlers(app)
    app.add_middleware(BodyLimit, limit=get_settings().max_request_bytes)
    return app
