"""Airflow's home for the parts made from Airflow's side of the code (the REST API's plugin,
the DAGs' Params): a folder of the build's own."""

from __future__ import annotations

import os
import tempfile


def private_airflow_home() -> None:
    """Airflow configured in a folder of its own, unless something already says where: the
    docs' build must not read or write a real installation's."""
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="octotrain-docs-airflow-"))
