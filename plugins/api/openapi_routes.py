"""The API's OpenAPI document and its interactive page, behind Airflow's login like every other
route: FastAPI serves both anonymously by default (``/openapi.json``, ``/docs``), so the app
turns those off and serves them here, with Swagger UI from the plugin's own npm packages (no
CDN: nothing leaves the Airflow server)."""

from __future__ import annotations

from typing import Any

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

OPENAPI_PATH = "/openapi.json"
DOCS_PATH = "/docs"

router = APIRouter(include_in_schema=False, dependencies=[Depends(get_user)])


@router.get(OPENAPI_PATH)
def openapi_document(request: Request) -> dict[str, Any]:
    """The API's OpenAPI document (FastAPI's, made once and kept by the app)."""
    return request.app.openapi()


@router.get(DOCS_PATH, response_class=HTMLResponse)
def interactive_document(request: Request) -> HTMLResponse:
    """Swagger UI over the document, as the browser reaches it inside Airflow."""
    root = request.scope.get("root_path", "")
    return get_swagger_ui_html(
        openapi_url=root + OPENAPI_PATH,
        title="Octotrain API",
        swagger_js_url=f"{root}/ui/static/swagger-ui-bundle.js",
        swagger_css_url=f"{root}/ui/static/swagger-ui.css",
        swagger_favicon_url=f"{root}/ui/static/nav_icon_light.svg",
    )
