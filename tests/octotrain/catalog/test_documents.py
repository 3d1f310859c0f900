"""The rules of catalog documents that need nothing but the document: algorithm parameter
declarations, variable names, images, sample types, versions."""

from __future__ import annotations

from typing import Any

import pytest

from octotrain.catalog.documents import AlgorithmDocument, ResourceSpecDocument, TaskCopyDocument
from octotrain.documents import parse_document
from octotrain.errors import InvalidInput

ALGORITHM = {
    "name": "a",
    "image": "python:3.11-slim",
    "command": ["python", "train.py"],
    "sample_type": "table",
}


def algorithm_problems(**changes: Any) -> dict[str, str]:
    with pytest.raises(InvalidInput) as caught:
        parse_document(AlgorithmDocument, ALGORITHM | changes)
    return {problem.field: problem.rule for problem in caught.value.problems}


@pytest.mark.parametrize(
    "image",
    [
        "python:3.11-slim",
        "registry.example.com:5000/team/train:1.0",
        "swr.cn-north-4.myhuaweicloud.com/ma/pytorch_1_8:v1",
        "busybox@sha256:" + "a" * 64,
    ],
)
def test_valid_images(image: str) -> None:
    assert parse_document(AlgorithmDocument, ALGORITHM | {"image": image}).image == image


@pytest.mark.parametrize("image", ["", "Python:3", "python 3", "a" * 513, "python:"])
def test_invalid_images(image: str) -> None:
    assert "container image reference" in algorithm_problems(image=image)["image"]


@pytest.mark.parametrize(
    ("parameters", "rule"),
    [
        ([{"name": "x", "type": "enum"}], "needs a non-empty list of choices"),
        ([{"name": "x", "type": "int", "choices": [1]}], "only for enum"),
        ([{"name": "x", "type": "enum", "choices": ["a", "a"]}], "must not repeat"),
        ([{"name": "x", "type": "bool", "min": 0}], "only for int and float"),
        ([{"name": "x", "type": "int", "min": 5, "max": 1}], "must not be greater than max"),
        ([{"name": "x", "type": "int", "default": "5"}], "default must be of type int"),
        ([{"name": "x", "type": "int", "default": 9, "max": 5}], "default must be within"),
        ([{"name": "x", "type": "float", "default": float("inf")}], "finite number"),
        ([{"name": "x", "type": "tensor"}], "'int', 'float', 'bool', 'string' or 'enum'"),
        ([{"name": "1x"}], "should match pattern"),
        ([{"name": "x"}, {"name": "x"}], "repeated: x"),
    ],
)
def test_parameter_declarations(parameters: list[dict[str, Any]], rule: str) -> None:
    found = algorithm_problems(parameters=parameters)
    assert any(rule in text for text in found.values()), found


def test_variables_are_valid_names_and_not_the_platforms() -> None:
    assert "bad: 1X" in algorithm_problems(env={"1X": "v"})["env"]
    assert (
        "OUTPUT, RANK are set by the platform"
        in algorithm_problems(env={"OUTPUT": "/x", "RANK": "0"})["env"]
    )


def test_command_needs_a_part() -> None:
    assert "command" in algorithm_problems(command=[])


def test_sample_type_and_spec_numbers() -> None:
    assert "lower-case" in algorithm_problems(sample_type="Table")["sample_type"]
    with pytest.raises(InvalidInput) as caught:
        parse_document(
            ResourceSpecDocument,
            {"name": "s", "cpu": True, "memory_mib": 0, "gpu_count": -1, "kind": "k8s"},
        )
    assert {p.field for p in caught.value.problems} == {"cpu", "memory_mib", "gpu_count", "kind"}


def test_copy_names_skip_taken_ones() -> None:
    request = TaskCopyDocument()
    assert request.named("t", set()).name == "t-copy"
    assert request.named("t", {"t-copy", "t-copy-2"}).name == "t-copy-3"
    assert TaskCopyDocument(name="x").named("t", {"x"}).name == "x"
