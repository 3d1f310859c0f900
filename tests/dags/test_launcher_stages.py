"""Each launcher has its stages and each stage table its launcher: the launchers
(``hooks/launchers.py``) and their stages (``dags/launcher_stages.py``) are keyed by the
values ``OCTOTRAIN_LAUNCHER`` may take."""

from __future__ import annotations

from typing import get_args

from dags.launcher_stages import LAUNCHER_STAGES
from hooks.launchers import LAUNCHERS
from octotrain.settings import Settings


def test_the_launchers_and_their_stages_are_keyed_by_the_settings_values() -> None:
    values = set(get_args(Settings.model_fields["launcher"].annotation))
    assert set(LAUNCHERS) == set(LAUNCHER_STAGES) == values
