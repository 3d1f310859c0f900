"""Where Octotrain's pages are inside Airflow: the prefix its plugin app is served under and the
route of its console in Airflow's UI. A leaf that imports nothing, so that the plugin that
registers them, the pages that link with them and the DAGs whose docs link to a task's page
read one spelling without importing each other."""

from __future__ import annotations

# The plugin app's prefix on Airflow's api-server: its REST API, pages and static files.
URL_PREFIX = "/octotrain"
# The console's route in Airflow's UI (/plugin/<route>), to which the pages link back.
CONSOLE_ROUTE = "octotrain-tasks"


def console_page(path: str) -> str:
    """A console page's address inside Airflow's UI, relative to Airflow's root (its
    ``<base href>``): ``/ui/tasks/5`` → ``plugin/octotrain-tasks/octotrain/ui/tasks/5``."""
    return f"plugin/{CONSOLE_ROUTE}{URL_PREFIX}{path}"
