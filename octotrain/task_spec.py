"""The training-task document: the manual's "Creating a training task" form as a pydantic model.

Only rules that need nothing but the document itself live here (lengths, characters, ranges,
limits on list sizes). Rules that need the catalog (does the algorithm exist?) live in
``octotrain.planning`` so that both are applied by every entry point the same way.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from octotrain.errors import FieldProblem, TaskDefinitionError

# Chinese (CJK unified ideographs, incl. extension A and compatibility) or English letters,
# digits, "_" and "-".
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_\-\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{1,64}$")
DESCRIPTION_FORBIDDEN = "@^\\#$%&*<>'|\"/"
MAX_DATA_INPUTS = 10
MAX_MOUNTS = 10
MAX_INPUT_MODELS = 10

ParameterValue = StrictBool | StrictInt | StrictFloat | StrictStr


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetVersionRef(_Strict):
    """A dataset version by name, e.g. ``{"dataset": "iris", "version": "v1"}``."""

    dataset: StrictStr = Field(min_length=1, max_length=64)
    version: StrictStr = Field(min_length=1, max_length=32)

    @property
    def label(self) -> str:
        return f"{self.dataset}_{self.version}"


class CacheRef(_Strict):
    """A data cache by name."""

    cache: StrictStr = Field(min_length=1, max_length=64)

    @property
    def label(self) -> str:
        return self.cache


class ModelVersionRef(_Strict):
    repository: StrictStr = Field(min_length=1, max_length=64)
    version: StrictInt = Field(ge=1)

    @property
    def label(self) -> str:
        return f"{self.repository}_{self.version}"


DataInput = DatasetVersionRef | CacheRef


class TaskSpec(_Strict):
    """A training task as a user writes it (UI form, REST body or YAML file)."""

    project: StrictStr = Field(min_length=1, max_length=64)
    name: StrictStr
    description: StrictStr = ""
    resource_spec: StrictStr = Field(min_length=1, max_length=64)
    node_count: StrictInt = Field(default=1, ge=1)
    priority: StrictInt = Field(default=0, ge=-50, le=50)
    algorithm: StrictStr = Field(min_length=1, max_length=64)
    parameters: dict[str, ParameterValue] = Field(default_factory=dict)
    env: dict[str, StrictStr] = Field(default_factory=dict)
    run_as_uid: StrictInt = Field(default=1000, ge=0, le=65535)
    training_kind: Literal["regular", "incremental"] = "regular"
    model_repository: StrictStr = Field(min_length=1, max_length=64)
    input_models: Annotated[list[ModelVersionRef], Field(max_length=MAX_INPUT_MODELS)] = Field(
        default_factory=list
    )
    data_inputs: Annotated[list[DataInput], Field(max_length=MAX_DATA_INPUTS)] = Field(
        default_factory=list
    )
    mounts: Annotated[list[DatasetVersionRef], Field(max_length=MAX_MOUNTS)] = Field(
        default_factory=list
    )

    @field_validator("name")
    @classmethod
    def _name_rule(cls, value: str) -> str:
        if not NAME_PATTERN.fullmatch(value):
            raise ValueError(
                "must be 1-64 characters of Chinese or English letters, digits, '_' and '-'"
            )
        return value

    @field_validator("description")
    @classmethod
    def _description_rule(cls, value: str) -> str:
        if len(value) > 256:
            raise ValueError(f"must be at most 256 characters, got {len(value)}")
        found = sorted({char for char in value if char in DESCRIPTION_FORBIDDEN})
        if found:
            raise ValueError(
                f"must not contain any of {DESCRIPTION_FORBIDDEN}; found {' '.join(found)}"
            )
        return value

    @model_validator(mode="after")
    def _incremental_rule(self) -> Self:
        if self.training_kind == "incremental" and not self.input_models:
            raise ValueError("incremental training needs 1-10 input model versions")
        if self.training_kind == "regular" and self.input_models:
            raise ValueError("input_models are only allowed for incremental training")
        return self


def parse_task_spec(document: object) -> TaskSpec:
    """Validate a task document, reporting every broken rule with its field path."""
    try:
        return TaskSpec.model_validate(document)
    except ValidationError as error:
        raise TaskDefinitionError(
            [
                FieldProblem(
                    field=".".join(str(part) for part in problem["loc"]) or "task",
                    rule=problem["msg"].removeprefix("Value error, "),
                )
                for problem in error.errors()
            ]
        ) from None
