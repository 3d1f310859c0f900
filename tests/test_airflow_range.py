"""Octotrain runs on any patch release of Airflow 3.3 from 3.3.2: ``pyproject.toml`` asks for
that range (no exact pin), the lock resolves Airflow inside it, and this environment has the
locked Airflow. An upgrade within the range is ``uv lock --upgrade-package apache-airflow
--upgrade-package apache-airflow-core --upgrade-package apache-airflow-task-sdk``, after which
``tests/hooks/airflow/test_airflow_compat.py`` says whether the internals Octotrain uses still
hold."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
AIRFLOW_PACKAGES = ("apache-airflow", "apache-airflow-core")


def requirement(name: str) -> Requirement:
    document = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = [Requirement(line) for line in document["project"]["dependencies"]]
    return next(each for each in found if each.name == name)


def locked_version(name: str) -> Version:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    return next(Version(each["version"]) for each in lock["package"] if each["name"] == name)


@pytest.mark.parametrize("name", AIRFLOW_PACKAGES)
def test_the_project_takes_every_patch_release_of_airflow_3_3_and_no_other(name: str) -> None:
    allowed = requirement(name).specifier
    assert all(Version(each) in allowed for each in ("3.3.2", "3.3.3", "3.3.17"))
    assert not any(Version(each) in allowed for each in ("3.3.1", "3.4.0", "4.0.0"))


@pytest.mark.parametrize("name", AIRFLOW_PACKAGES)
def test_the_lock_resolves_airflow_3_3_and_this_environment_runs_it(name: str) -> None:
    locked = locked_version(name)
    assert locked.release[:2] == (3, 3)
    assert locked in requirement(name).specifier
    assert Version(version(name)) == locked
