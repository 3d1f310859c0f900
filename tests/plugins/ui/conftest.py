"""The pages are served by the plugin app of the API tests (``api``: the same fixture); the
browser tests inside Airflow's UI share one live Airflow for the whole session (``airflow``),
whichever module asks first starting it."""

from collections.abc import Iterator

import pytest

from tests.live_airflow import LiveAirflow
from tests.plugins.api.conftest import api
from tests.plugins.ui.inside_airflow import console_airflow

__all__ = ["airflow", "api"]


@pytest.fixture(scope="session")
def airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveAirflow]:
    yield from console_airflow(tmp_path_factory.mktemp("console"))
