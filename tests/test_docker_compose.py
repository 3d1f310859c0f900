"""docker-compose.yaml parses and wires what the README promises (no Docker engine here)."""

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
    environments = [services[name]["environment"] for name in services if name != "postgres"]
    assert all(env == environments[0] for env in environments)
    assert environments[0]["OCTOTRAIN_CATALOG_URL"].endswith("/octotrain")
    assert (REPO_ROOT / "config" / "postgres-init.sql").is_file()
