"""The Airflow plugin: Octotrain's API and pages inside Airflow's api-server and UI.

Registered through the ``airflow.plugins`` entry point (pyproject.toml), so it is loaded
wherever the package is installed, without copying files into a plugins folder.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from plugins.api.app import URL_PREFIX, create_app


class OctotrainPlugin(AirflowPlugin):
    name = "octotrain"
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [
        {"app": create_app(), "url_prefix": URL_PREFIX, "name": "Octotrain"}
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
            "name": "Training tasks",
            "href": f"{URL_PREFIX}/ui/tasks",
            "destination": "nav",
            "url_route": "octotrain-tasks",
        }
    ]
