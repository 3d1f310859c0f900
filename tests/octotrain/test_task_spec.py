import pytest

from octotrain.errors import InvalidInput
from octotrain.task_spec import parse_task_spec

VALID = {
    "project": "demo",
    "name": "训练-task_1",
    "resource_spec": "cpu-small",
    "algorithm": "linear",
    "model_repository": "models",
}


def problems(**changes: object) -> dict[str, str]:
    with pytest.raises(InvalidInput) as caught:
        parse_task_spec(VALID | changes)
    return {problem.field: problem.rule for problem in caught.value.problems}


def test_minimal_task_gets_the_manuals_defaults() -> None:
    spec = parse_task_spec(VALID)
    assert (spec.node_count, spec.priority, spec.run_as_uid) == (1, 0, 1000)
    assert spec.training_kind == "regular"


@pytest.mark.parametrize("name", ["a", "A" * 64, "中文名称", "x_y-z9"])
def test_valid_names(name: str) -> None:
    assert parse_task_spec(VALID | {"name": name}).name == name


@pytest.mark.parametrize("name", ["", "A" * 65, "has space", "semi;colon", "café"])
def test_invalid_names(name: str) -> None:
    assert "name" in problems(name=name)


def test_description_reports_the_forbidden_characters_found() -> None:
    rule = problems(description="ok but @ and / here")["description"]
    assert "found / @" in rule
    assert "description" in problems(description="x" * 257)
    assert parse_task_spec(VALID | {"description": "x" * 256}).description == "x" * 256


@pytest.mark.parametrize("priority", [3.5, "10", True, 51, -51])
def test_invalid_priorities(priority: object) -> None:
    assert "priority" in problems(priority=priority)


@pytest.mark.parametrize("uid", [-1, 65536, "1000"])
def test_invalid_uids(uid: object) -> None:
    assert "run_as_uid" in problems(run_as_uid=uid)


def test_every_problem_is_reported_at_once() -> None:
    found = problems(name="bad name", priority=99, node_count=0, unknown_field=1)
    assert set(found) == {"name", "priority", "node_count", "unknown_field"}


def test_at_most_ten_data_inputs() -> None:
    inputs = [{"dataset": "d", "version": f"v{i}"} for i in range(11)]
    assert "data_inputs" in problems(data_inputs=inputs)
    assert len(parse_task_spec(VALID | {"data_inputs": inputs[:10]}).data_inputs) == 10
