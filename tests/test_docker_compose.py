"""docker-compose.yaml parses and wires what the README promises (no Docker engine here)."""

import json

import yaml

from octotrain.settings import REPO_ROOT


def test_compose_file_has_the_services_and_shares_one_configuration() -> None:
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yaml").read_text())
    services = compose["services"]
    assert {
        "postgres",
        "airflow-init",
        "airflow-api-server",
        "airflow-scheduler",
        "airflow-dag-processor",
    } <= set(services)
    airflow = [name for name in services if name.startswith("airflow")]
    environments = [services[name]["environment"] for name in airflow]
    assert all(env == environments[0] for env in environments)
    assert environments[0]["OCTOTRAIN_CATALOG_URL"].endswith("/octotrain")
    # MinIO is the default object store, reached through an Airflow connection.
    assert environments[0]["OCTOTRAIN_OBJECT_STORE_URL"] == "s3://octotrain?conn_id=minio_default"
    connection = json.loads(environments[0]["AIRFLOW_CONN_MINIO_DEFAULT"])
    assert connection["extra"]["endpoint_url"] == "http://minio:9000"
    assert {"minio", "minio-init"} <= set(services)
    assert "mc mb --ignore-existing local/octotrain" in services["minio-init"]["entrypoint"]
    assert (REPO_ROOT / "config" / "postgres-init.sql").is_file()
