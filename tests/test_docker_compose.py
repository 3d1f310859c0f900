"""docker-compose.yaml is a valid Compose file and wires what docs/how-to/deploy-compose.md
promises (no Docker engine runs here, so nothing is started): Compose itself parses it
(`docker compose config`, or Debian's docker-compose together with the Compose schema that
package ships), and every Airflow
service shares one configuration: the CeleryExecutor with Redis and PostgreSQL, one JWT secret,
API secret key and Fernet key, the FAB auth manager, task logs in MinIO, the kubeconfig."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any, NoReturn

import jsonschema
import pytest
import yaml

from octotrain.settings import DEFAULTS_FILE, REPO_ROOT, load_settings

COMPOSE_FILE = REPO_ROOT / "docker-compose.yaml"
AIRFLOW_SERVICES = {
    "airflow-init",
    "airflow-api-server",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "airflow-worker",
}
ONE_SHOT = {"minio-init", "airflow-init"}
# A short-syntax volume: source (which may hold a ${VAR:-default}), target, optional mode.
MOUNT = re.compile(r"(?P<source>.+):(?P<target>/[^:]*)(?::(?P<mode>ro|rw))?")
FAB = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))["services"]


@pytest.fixture(scope="module")
def environment(services: dict[str, Any]) -> dict[str, str]:
    """The one environment of the Airflow services."""
    return services["airflow-scheduler"]["environment"]


def no_validator(reason: str) -> NoReturn:
    """In CI a missing validator is a failure (the check would silently stop); elsewhere the
    test is skipped, saying what to install."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI installs Debian's docker-compose: see .ci/run)")
    pytest.skip(f"{reason}; install the Compose plugin or `apt-get install docker-compose`")


def compose_v2_available() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    version = subprocess.run([docker, "compose", "version"], capture_output=True, check=False)
    return version.returncode == 0


def debian_compose_schema() -> Path | None:
    """The Compose schema shipped by Debian's docker-compose package, if it is installed."""
    if shutil.which("dpkg") is None:
        return None
    listed = subprocess.run(
        ["dpkg", "-L", "docker-compose"], capture_output=True, text=True, check=False
    )
    found = [line for line in listed.stdout.splitlines() if line.endswith("/compose_spec.json")]
    return Path(found[0]) if listed.returncode == 0 and found else None


def compose_config(command: list[str], env_file: Path) -> subprocess.CompletedProcess[str]:
    """`config -q`: parse, interpolate (with the file's defaults) and validate, quietly. A local
    .env must not decide the outcome, hence an empty env file."""
    env_file.write_text("")
    return subprocess.run(
        [*command, "--env-file", str(env_file), "-f", str(COMPOSE_FILE), "config", "-q"],
        capture_output=True, text=True, cwd=REPO_ROOT, check=False, timeout=120,
    )  # fmt: skip


def test_compose_parses_the_file(tmp_path: Path) -> None:
    """`docker compose config` where the Compose plugin is installed; otherwise Debian's
    docker-compose (which parses without a Docker engine) and a validation against the
    Compose schema it ships, so that a key it would ignore or misread is still caught."""
    if compose_v2_available():
        checked = compose_config(["docker", "compose"], tmp_path / ".env")
        assert checked.returncode == 0, checked.stderr
        return
    schema_file = debian_compose_schema()
    if shutil.which("docker-compose") is None or schema_file is None:
        no_validator("neither `docker compose` nor Debian's docker-compose is installed")
    checked = compose_config(["docker-compose"], tmp_path / ".env")
    assert checked.returncode == 0, checked.stderr
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    # Its "$schema" (draft 2019-09, with a trailing "#") is not a key jsonschema knows it by.
    validator_class = jsonschema.validators.validator_for(schema, jsonschema.Draft201909Validator)
    validator = validator_class(schema)
    errors = [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(yaml.safe_load(COMPOSE_FILE.read_text()))
    ]
    assert not errors, errors


def test_the_stack_has_every_service_and_every_long_running_one_a_healthcheck(
    services: dict[str, Any],
) -> None:
    assert {"postgres", "redis", "minio", "minio-init"} | AIRFLOW_SERVICES == set(services)
    for name in set(services) - ONE_SHOT:
        test = services[name].get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), name
    checks = {name: " ".join(services[name]["healthcheck"]["test"][1:]) for name in services
              if name not in ONE_SHOT}  # fmt: skip
    assert "/api/v2/monitor/health" in checks["airflow-api-server"]
    for name, job in [("airflow-scheduler", "SchedulerJob"), ("airflow-triggerer", "TriggererJob"),
                      ("airflow-dag-processor", "DagProcessorJob")]:  # fmt: skip
        assert checks[name] == f"airflow jobs check --job-type {job} --local"
    assert checks["airflow-worker"].split() == [
        "celery", "--app", "airflow.providers.celery.executors.celery_executor.app",
        "inspect", "ping", "-d", '"celery@$${HOSTNAME}"',
    ]  # fmt: skip
    assert checks["redis"] == "redis-cli ping" and checks["postgres"].startswith("pg_isready")
    assert services["airflow-api-server"]["ports"] == ["${AIRFLOW_PORT:-8080}:8080"]


def test_every_airflow_service_runs_the_octotrain_image_with_one_configuration(
    services: dict[str, Any], environment: dict[str, str]
) -> None:
    for name in AIRFLOW_SERVICES:
        service = services[name]
        assert service["environment"] == environment, name
        assert service["build"] == "."
        # One image: the Airflow components' and the training pods' init and sidecar containers.
        assert service["image"] == environment["OCTOTRAIN_OCTOTRAIN_IMAGE"]
        assert "_PIP_ADDITIONAL_REQUIREMENTS" not in service["environment"]
    commands = {name: services[name]["command"] for name in AIRFLOW_SERVICES - {"airflow-init"}}
    assert commands == {
        "airflow-api-server": ["airflow", "api-server"],
        "airflow-scheduler": ["airflow", "scheduler"],
        "airflow-dag-processor": ["airflow", "dag-processor"],
        "airflow-triggerer": ["airflow", "triggerer"],
        "airflow-worker": ["airflow", "celery", "worker"],
    }
    # One JWT secret, API secret key and Fernet key for all, each a variable to change.
    for key in ("AIRFLOW__API_AUTH__JWT_SECRET", "AIRFLOW__API__SECRET_KEY",
                "AIRFLOW__CORE__FERNET_KEY"):  # fmt: skip
        assert re.fullmatch(r"\$\{[A-Z_]+:-[^}]+\}", environment[key]), key
    assert environment["AIRFLOW__CORE__AUTH_MANAGER"] == FAB
    assert environment["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/octotrain/dags"
    # Each service's dependencies are up (healthy) or done (the init steps) before it starts.
    for name in AIRFLOW_SERVICES - {"airflow-init"}:
        assert services[name]["depends_on"]["airflow-init"] == {
            "condition": "service_completed_successfully"
        }


def test_the_workers_are_celery_workers_on_redis_with_the_postgres_result_backend(
    services: dict[str, Any], environment: dict[str, str]
) -> None:
    assert environment["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert environment["AIRFLOW__CELERY__BROKER_URL"] == "redis://redis:6379/0"
    database = environment["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]
    assert database.startswith("postgresql+psycopg2://") and database.endswith(
        "@postgres:5432/airflow"
    )
    result_backend = environment["AIRFLOW__CELERY__RESULT_BACKEND"]
    assert result_backend == "db+postgresql://" + database.removeprefix("postgresql+psycopg2://")
    # The catalog: its own database on the same server (created by config/postgres-init.sql).
    catalog = environment["OCTOTRAIN_CATALOG_URL"]
    assert catalog == database.removesuffix("/airflow") + "/octotrain"
    assert "CREATE DATABASE octotrain" in (REPO_ROOT / "config" / "postgres-init.sql").read_text()
    assert (
        "./config/postgres-init.sql:/docker-entrypoint-initdb.d/octotrain.sql:ro"
        in (services["postgres"]["volumes"])
    )
    # Scaled with `--scale airflow-worker=N`: nothing pins one container.
    worker = services["airflow-worker"]
    assert not {"container_name", "hostname", "ports"} & set(worker)


def test_the_object_store_and_the_task_logs_are_in_the_minio_bucket(
    services: dict[str, Any], environment: dict[str, str]
) -> None:
    assert environment["OCTOTRAIN_OBJECT_STORE_URL"] == "s3://octotrain?conn_id=minio_default"
    connection = json.loads(environment["AIRFLOW_CONN_MINIO_DEFAULT"])
    assert connection["conn_type"] == "aws"
    assert connection["extra"]["endpoint_url"] == "http://minio:9000"
    assert environment["AIRFLOW__LOGGING__REMOTE_LOGGING"] == "True"
    assert environment["AIRFLOW__LOGGING__REMOTE_BASE_LOG_FOLDER"] == "s3://octotrain/airflow-logs"
    assert environment["AIRFLOW__LOGGING__REMOTE_LOG_CONN_ID"] == "minio_default"
    assert "mc mb --ignore-existing local/octotrain" in services["minio-init"]["entrypoint"]
    assert [port for port in services["minio"]["ports"] if port.endswith(":9001")]  # console


def test_the_kubernetes_launcher_reaches_the_cluster_by_the_mounted_kubeconfig(
    services: dict[str, Any], environment: dict[str, str]
) -> None:
    connection = json.loads(environment["AIRFLOW_CONN_KUBERNETES_DEFAULT"])
    assert connection["conn_type"] == "kubernetes"
    config_dir = Path(connection["extra"]["kube_config_path"]).parent
    for name in AIRFLOW_SERVICES:
        mounts = [MOUNT.fullmatch(volume) for volume in services[name]["volumes"]]
        assert [m["mode"] for m in mounts if m and m["target"] == str(config_dir)] == ["ro"], name
    assert environment["OCTOTRAIN_LAUNCHER"] == "${OCTOTRAIN_LAUNCHER:-local}"


def test_octotrain_settings_in_the_environment_are_real_and_valid(
    environment: dict[str, str],
) -> None:
    known = {"OCTOTRAIN_" + key.upper() for key in tomllib.loads(DEFAULTS_FILE.read_text())}
    named = {key for key in environment if key.startswith("OCTOTRAIN_")}
    assert named <= known, sorted(named - known)
    defaults = {key: re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", environment[key]) for key in named}
    settings = load_settings(defaults)  # with the file's defaults, as Compose would set them
    assert settings.catalog_url.endswith("@postgres:5432/octotrain")


def test_airflow_init_migrates_airflow_and_the_catalog_and_creates_the_admin(
    services: dict[str, Any],
) -> None:
    init = services["airflow-init"]
    assert init["restart"] == "no"
    script = " ".join(init["command"])
    steps = [step.strip() for step in script.removeprefix("bash -c ").split("&&")]
    assert steps[:2] == ["airflow db migrate", "octotrain init"]
    admin = steps[2].split()
    assert admin[:3] == ["airflow", "users", "create"]
    assert admin[admin.index("--role") + 1] == "Admin"
    # The admin's login is the one `octotrain task run` uses (OCTOTRAIN_AIRFLOW_*).
    assert admin[admin.index("--username") + 1] == '"$${OCTOTRAIN_AIRFLOW_USERNAME}"'
    assert admin[admin.index("--password") + 1] == '"$${OCTOTRAIN_AIRFLOW_PASSWORD}"'
    assert init["depends_on"]["minio-init"] == {"condition": "service_completed_successfully"}
    assert init["depends_on"]["postgres"] == {"condition": "service_healthy"}
