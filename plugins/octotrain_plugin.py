"""The Airflow plugin: Octotrain's API inside Airflow's api-server.

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
