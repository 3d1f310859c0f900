"""A run's conf applied to its task, and the reserved names algorithms may not take."""

from __future__ import annotations

import pytest

from octotrain.errors import InvalidTrigger
from octotrain.parameters import ParameterDeclaration
from octotrain.run_settings import RUN_SETTING_NAMES, with_run_settings

SAVED = {
    "name": "t",
    "node_count": 2,
    "priority": 0,
    "parameters": {"epochs": 5, "seed": 1},
    "env": {"OMP_NUM_THREADS": "2"},
}


def test_conf_overrides_parameters_settings_and_merges_env() -> None:
    conf = {"epochs": 9, "node_count": 1, "priority": 20, "env": {"EXTRA": "x"}}
    document = with_run_settings(SAVED, conf)
    assert document["parameters"] == {"epochs": 9, "seed": 1}
    assert document["node_count"] == 1 and document["priority"] == 20
    assert document["env"] == {"OMP_NUM_THREADS": "2", "EXTRA": "x"}
    assert SAVED["parameters"] == {"epochs": 5, "seed": 1}  # the saved task is untouched


def test_null_means_as_saved_and_an_empty_conf_changes_nothing() -> None:
    assert with_run_settings(SAVED, {"epochs": None, "node_count": None}) == SAVED
    assert with_run_settings(SAVED, {}) == SAVED


@pytest.mark.parametrize(
    ("conf", "field"), [([1], "conf"), ("x", "conf"), ({"env": ["A"]}, "conf.env")]
)
def test_a_conf_that_is_not_an_object_is_refused_by_field(conf: object, field: str) -> None:
    with pytest.raises(InvalidTrigger) as refused:
        with_run_settings(SAVED, conf)
    assert refused.value.problems[0].field == field


@pytest.mark.parametrize("name", RUN_SETTING_NAMES)
def test_algorithms_may_not_name_a_parameter_like_a_run_setting(name: str) -> None:
    with pytest.raises(ValueError, match=f"parameter name '{name}' is reserved"):
        ParameterDeclaration.model_validate({"name": name, "type": "int"})
