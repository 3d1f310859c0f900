"""Octotrain's settings, read from one place.

Defaults live in ``config/defaults.toml`` so that operators can read them without reading code;
each one is overridden by an ``OCTOTRAIN_<NAME>`` environment variable, which is how Airflow
workers, containers and tests point Octotrain elsewhere.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULTS_FILE = REPO_ROOT / "config" / "defaults.toml"
ENV_PREFIX = "OCTOTRAIN_"


class Settings(BaseModel):
    """Resolved settings: paths are absolute and ``{state_dir}`` is expanded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state_dir: Path
    catalog_url: str = Field(min_length=1)
    object_store_url: str = Field(min_length=1)
    launcher: Literal["local", "kubernetes"]
    runs_dir: Path
    local_code_dir: Path
    stop_grace_seconds: float = Field(gt=0)
    checkpoint_sync_seconds: float = Field(gt=0)
    node_cache_dir: Path
    node_cache_max_gb: float = Field(gt=0)
    mounts_root: str
    object_store_attempts: int = Field(ge=1, le=20)
    object_store_retry_wait_seconds: float = Field(gt=0, le=60)
    kubernetes_conn_id: str = Field(min_length=1)
    kubernetes_namespace: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    octotrain_image: str = Field(min_length=1)
    kubernetes_config_file: Path
    airflow_api_url: str = Field(pattern=r"^https?://")
    airflow_username: str = Field(min_length=1)
    airflow_password: str
    max_request_bytes: int = Field(ge=1024)
    max_code_mb: int = Field(ge=1, le=10240)
    local_admission: bool
    local_cores: float = Field(ge=0)
    local_memory_gb: float = Field(ge=0)
    local_nodes: int = Field(ge=0)
    local_quotas_file: Path

    @property
    def max_code_bytes(self) -> int:
        """``max_code_mb`` in bytes: the bound of one algorithm code upload."""
        return self.max_code_mb * 1024 * 1024

    @field_validator("object_store_url")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        if not value.startswith(("file://", "s3://")):
            raise ValueError("must start with file:// (local folder) or s3:// (MinIO/S3)")
        return value


def _resolve_path(raw: str) -> Path:
    path = Path(raw).expanduser()
    return path if path.is_absolute() else (REPO_ROOT / path)


def load_settings(environ: dict[str, str] | None = None) -> Settings:
    """Read the defaults, apply ``OCTOTRAIN_*`` overrides and resolve paths."""
    env = os.environ if environ is None else environ
    raw: dict[str, object] = tomllib.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
    for key in list(raw):
        override = env.get(ENV_PREFIX + key.upper())
        if override is not None and override != "":
            raw[key] = override
    state_dir = _resolve_path(str(raw["state_dir"])).resolve()
    expanded = {
        key: value.replace("{state_dir}", str(state_dir)) if isinstance(value, str) else value
        for key, value in raw.items()
    }
    expanded["state_dir"] = state_dir
    paths = ("runs_dir", "local_code_dir", "node_cache_dir", "kubernetes_config_file",
             "local_quotas_file")  # fmt: skip
    for key in paths:
        expanded[key] = _resolve_path(str(expanded[key])).resolve()
    object_store = str(expanded["object_store_url"])
    if object_store.startswith("file://"):
        expanded["object_store_url"] = "file://" + str(_resolve_path(object_store[7:]))
    return Settings.model_validate(expanded)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once; tests call ``get_settings.cache_clear()``)."""
    return load_settings()
