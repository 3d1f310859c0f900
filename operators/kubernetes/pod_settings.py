"""The settings every Kubernetes stage builds its pods and calls with (one place)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import yaml

from octotrain.kubernetes_config import kubernetes_config
from octotrain.pods import PodSettings
from octotrain.settings import REPO_ROOT, get_settings


def store_environment() -> dict[str, str]:
    """The object store's settings for the stage and sync containers, from this worker's:
    used only when no Secret holds them (``object_store_secret`` empty)."""
    from airflow.sdk import Connection

    url = get_settings().object_store_url
    env = {"OCTOTRAIN_OBJECT_STORE_URL": url}
    if url.startswith("s3://"):
        conn_id = parse_qs(urlparse(url).query).get("conn_id", ["minio_default"])[0]
        env[f"AIRFLOW_CONN_{conn_id.upper()}"] = Connection.get(conn_id).get_uri()
    return env


def pod_settings(resource_spec: str) -> PodSettings:
    settings, config = get_settings(), kubernetes_config()
    template_file = config.scheduling(resource_spec).pod_template_file
    template = (
        yaml.safe_load((REPO_ROOT / Path(template_file)).read_text(encoding="utf-8"))
        if template_file
        else {}
    )
    return PodSettings(
        namespace=settings.kubernetes_namespace,
        octotrain_image=settings.octotrain_image,
        config=config,
        stop_grace_seconds=int(settings.stop_grace_seconds),
        checkpoint_sync_seconds=settings.checkpoint_sync_seconds,
        store_env={} if config.object_store_secret else store_environment(),
        template=template or {},
    )
