from pathlib import Path

import pytest
from pydantic import ValidationError

from octotrain.settings import REPO_ROOT, load_settings


def test_defaults_live_under_the_state_folder_of_the_repository() -> None:
    settings = load_settings({})
    assert settings.state_dir == (REPO_ROOT / "state").resolve()
    assert settings.catalog_url == f"sqlite:///{settings.state_dir}/catalog.db"
    assert settings.object_store_url == f"file://{settings.state_dir}/objects"
    assert settings.launcher == "local"
    assert settings.runs_dir == settings.state_dir / "runs"
    assert settings.local_code_dir == REPO_ROOT


def test_environment_overrides_every_setting(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "OCTOTRAIN_STATE_DIR": str(tmp_path),
            "OCTOTRAIN_CATALOG_URL": "postgresql+psycopg2://u@h/db",
            "OCTOTRAIN_OBJECT_STORE_URL": "s3://bucket?conn_id=minio",
            "OCTOTRAIN_LAUNCHER": "kubernetes",
            "OCTOTRAIN_STOP_GRACE_SECONDS": "3",
        }
    )
    assert settings.state_dir == tmp_path
    assert settings.catalog_url == "postgresql+psycopg2://u@h/db"
    assert settings.object_store_url == "s3://bucket?conn_id=minio"
    assert settings.launcher == "kubernetes"
    assert settings.runs_dir == tmp_path / "runs"
    assert settings.stop_grace_seconds == 3


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("OCTOTRAIN_LAUNCHER", "docker", "launcher"),
        ("OCTOTRAIN_OBJECT_STORE_URL", "ftp://x", "object_store_url"),
        ("OCTOTRAIN_STOP_GRACE_SECONDS", "-1", "stop_grace_seconds"),
    ],
)
def test_bad_override_names_the_setting(key: str, value: str, field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        load_settings({key: value})
