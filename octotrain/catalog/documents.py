"""What a user writes to create or change catalog objects (REST body, YAML file, form).

Field names are the catalog columns' names, so that an object's current document can be read
back from its row, a change merged into it and the result judged by the same rules again.
"""

from __future__ import annotations

import re
from typing import Annotated, Self

from pydantic import (
    AfterValidator,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from octotrain.catalog.models import AlgorithmType, AnnotationStatus, SpecKind
from octotrain.contracts import PLATFORM_ENV_NAMES
from octotrain.documents import (
    Description,
    Document,
    Name,
    PlainText,
    RefName,
    RefVersion,
    TextValue,
)
from octotrain.metric_definitions import MetricDefinition, unique_charts
from octotrain.metrics_meta import MAX_CHARTS
from octotrain.mount_volumes import mount_volumes
from octotrain.parameters import ParameterDeclaration
from octotrain.task_spec import MAX_NODES

CACHE_TTL_HOURS_MAX = 24 * 365
DEFAULT_TTL_HOURS = 24 * 7
# A container image reference: [registry[:port]/]path[:tag][@sha256:digest].
IMAGE_PATTERN = re.compile(
    r"(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
    r"(?:@sha256:[a-f0-9]{64})?"
)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
VERSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,31}")
SAMPLE_TYPE = re.compile(r"[a-z0-9_\-]{1,32}")
USERNAME_MAX = 256


def _image_rule(value: str) -> str:
    if len(value) > 512 or not IMAGE_PATTERN.fullmatch(value):
        raise ValueError(
            "must be a container image reference such as python:3.11-slim or "
            "registry.example.com/team/train:1.0"
        )
    return value


def _sample_type_rule(value: str) -> str:
    if not SAMPLE_TYPE.fullmatch(value):
        raise ValueError("must be 1-32 of lower-case letters, digits, '_' and '-' (e.g. table)")
    return value


def _version_rule(value: str) -> str:
    if not VERSION_NAME.fullmatch(value):
        raise ValueError(
            "must be 1-32 of letters, digits, '_', '.' and '-', starting with a letter or digit"
        )
    return value


Image = Annotated[StrictStr, AfterValidator(_image_rule)]
SampleType = Annotated[StrictStr, AfterValidator(_sample_type_rule)]
VersionName = Annotated[StrictStr, AfterValidator(_version_rule)]
Username = Annotated[PlainText, Field(min_length=1, max_length=USERNAME_MAX)]


class ProjectDocument(Document):
    name: Name
    description: Description = ""
    max_nodes: StrictInt = Field(default=64, ge=1, le=MAX_NODES)


class MemberDocument(Document):
    username: Username


class ResourceSpecDocument(Document):
    """A node's resources; ``kind`` ``modelarts`` allows resource mounts (the manual)."""

    name: Name
    kind: SpecKind = SpecKind.CCE
    cpu: StrictFloat = Field(gt=0, le=1024)
    memory_mib: StrictInt = Field(ge=1, le=16 * 1024 * 1024)
    gpu_count: StrictInt = Field(default=0, ge=0, le=64)
    gpu_type: PlainText = Field(default="", max_length=64)
    max_nodes: StrictInt = Field(default=1, ge=1, le=MAX_NODES)
    # ModelArts specs on Kubernetes: a volume of config/mount_volumes.toml for resource mounts.
    mount_volume: StrictStr = Field(default="", max_length=64)

    @model_validator(mode="after")
    def _known_mount_volume(self) -> Self:
        if self.mount_volume and self.mount_volume not in mount_volumes():
            known = ", ".join(sorted(mount_volumes())) or "none"
            raise ValueError(
                f"mount_volume '{self.mount_volume}' is not in config/mount_volumes.toml "
                f"(it has: {known})"
            )
        if self.mount_volume and self.kind != SpecKind.MODELARTS:
            raise ValueError("mount_volume is only for ModelArts-type specs (resource mounts)")
        return self


class AlgorithmDocument(Document):
    """An algorithm of algorithm management: image, command, parameter list, variables and the
    charts extracted from its log (``octotrain.metric_definitions``)."""

    name: Name
    description: Description = ""
    algorithm_type: AlgorithmType = AlgorithmType.CUSTOM_SCRIPT
    image: Image
    command: list[Annotated[PlainText, Field(min_length=1, max_length=4096)]] = Field(
        min_length=1, max_length=256
    )
    parameters: list[ParameterDeclaration] = Field(default_factory=list, max_length=256)
    env: dict[StrictStr, TextValue] = Field(default_factory=dict, max_length=256)
    sample_type: SampleType
    metric_definitions: list[MetricDefinition] = Field(
        default_factory=list,
        description=f"charts extracted from the train log: at most {MAX_CHARTS}, names unique",
    )

    @field_validator("metric_definitions")
    @classmethod
    def _chart_rules(
        cls, value: list[MetricDefinition], info: ValidationInfo
    ) -> list[MetricDefinition]:
        if "parameters" not in info.data:  # refused already: no second error about names
            return unique_charts(value, numeric_parameters=None)
        declared = info.data["parameters"]
        numeric = [item.name for item in declared if item.type in ("int", "float")]
        return unique_charts(value, numeric_parameters=numeric)

    @field_validator("parameters")
    @classmethod
    def _unique_parameters(cls, value: list[ParameterDeclaration]) -> list[ParameterDeclaration]:
        names = [item.name for item in value]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"parameter names must be unique; repeated: {', '.join(repeated)}")
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(name for name in value if not ENV_NAME.fullmatch(name))
        if bad:
            raise ValueError(
                f"variable names must be letters, digits and '_', not starting with a digit; "
                f"bad: {', '.join(bad)}"
            )
        reserved = sorted(PLATFORM_ENV_NAMES.intersection(value))
        if reserved:
            raise ValueError(f"{', '.join(reserved)} are set by the platform for every node")
        return value


class DatasetDocument(Document):
    name: Name
    sample_type: SampleType
    annotation_status: AnnotationStatus = AnnotationStatus.UNANNOTATED


class DatasetVersionDocument(Document):
    """A new dataset version: its files are uploaded with it (an import awaiting release)."""

    version: VersionName


class DataCacheDocument(Document):
    """A data cache: a pre-staged copy of one dataset version, usable until it expires (and,
    as the manual allows, after)."""

    name: Name
    dataset: RefName
    version: RefVersion
    ttl_hours: StrictInt = Field(default=DEFAULT_TTL_HOURS, ge=1, le=CACHE_TTL_HOURS_MAX)


class CacheRefreshDocument(Document):
    """Refresh a data cache; without ``ttl_hours`` it keeps its previous lifetime."""

    ttl_hours: StrictInt | None = Field(default=None, ge=1, le=CACHE_TTL_HOURS_MAX)


class ModelRepositoryDocument(Document):
    name: Name
    description: Description = ""


class ModelImportDocument(Document):
    """A model version imported from files (incremental training may start from it)."""

    description: Description = ""


class TaskCopyDocument(Document):
    """Copy a task; without a name the copy is called ``<name>-copy`` (then ``-copy-2`` …)."""

    name: Name | None = None

    def named(self, original: str, taken: set[str]) -> Self:
        if self.name is not None:
            return self
        base = f"{original}-copy"[:64]
        candidate, number = base, 2
        while candidate in taken:
            suffix = f"-{number}"
            candidate, number = base[: 64 - len(suffix)] + suffix, number + 1
        return self.model_copy(update={"name": candidate})
