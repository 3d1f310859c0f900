"""The Airflow plugin: Octotrain's API and pages inside Airflow's api-server and UI.

Registered through the ``airflow.plugins`` entry point (pyproject.toml), so it is loaded
wherever the package is installed, without copying files into a plugins folder. Airflow loads
plugins in every process, each task process included, so the plugin's FastAPI app (its routes,
models and catalog imports: seconds and tens of MB) is built only where it is served, on the
api-server's first request to it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin
from starlette.types import ASGIApp, Receive, Scope, Send

from octotrain.console_urls import CONSOLE_ROUTE, URL_PREFIX

# Its entry in Airflow's navigation: a 56 px button whose label Airflow cuts with an ellipsis
# ("Training tasks" read "Training t…"), so one short word; Airflow's iframe has it as title.
CONSOLE_NAME = "Training"
# The entry's icon, one per theme (an <img> cannot take the bar's colour): paths relative to
# Airflow's <base href>, so they hold under a base URL with a path too; served by the plugin.
CONSOLE_ICON = f"{URL_PREFIX.lstrip('/')}/ui/static/nav_icon_light.svg"
CONSOLE_ICON_DARK_MODE = f"{URL_PREFIX.lstrip('/')}/ui/static/nav_icon_dark.svg"


class AppOnFirstRequest:
    """An ASGI app that builds the plugin's FastAPI app when it first serves a request."""

    def __init__(self) -> None:
        self._app: ASGIApp | None = None

    def built(self) -> ASGIApp:
        if self._app is None:
            from plugins.app import create_app

            self._app = create_app()
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.built()(scope, receive, send)


class OctotrainPlugin(AirflowPlugin):
    name = "octotrain"
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [
        {"app": AppOnFirstRequest(), "url_prefix": URL_PREFIX, "name": "Octotrain"}
    ]
    # Tabs on a DAG run's page, embedded by Airflow's UI; Airflow fills in the ids.
    external_views: ClassVar[list[dict[str, Any]]] = [
        {
            "name": name.title(),
            "href": f"{URL_PREFIX}/ui/dags/{{DAG_ID}}/runs/{{RUN_ID}}/{name}",
            "destination": "dag_run",
            "url_route": f"octotrain-{name}",
        }
        for name in ("metrics", "resources", "logs")
    ] + [
        {
            "name": CONSOLE_NAME,
            "href": f"{URL_PREFIX}/ui/tasks",
            "destination": "nav",
            "url_route": CONSOLE_ROUTE,
            "icon": CONSOLE_ICON,
            "icon_dark_mode": CONSOLE_ICON_DARK_MODE,
        },
        # The docs site, in Airflow's own Docs menu (beside Airflow's documentation).
        {
            "name": "Octotrain docs",
            "href": f"{URL_PREFIX}/manual/",
            "destination": "nav",
            "category": "docs",
            "url_route": "octotrain-docs",
        },
    ]
