"""The training-task document: the manual's "Creating a training task" form as a pydantic model.

Only rules that need nothing but one field of the document live here (characters, lengths,
ranges, types, list sizes). Rules that need the catalog or several fields together (does the
algorithm exist? is incremental training given input models?) live in ``octotrain.task_rules``,
which applies both, so that every entry point checks a task the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, Field, StrictBool, StrictInt, StrictStr, model_validator

from octotrain.documents import (
    Description,
    Document,
    Name,
    RefName,
    RefVersion,
    Scalar,
    TextValue,
)
from octotrain.hang_detection import HangDetection
from octotrain.restarts import DEFAULT_MAX_NODE_RESTARTS, MAX_NODE_RESTARTS
from octotrain.schedules import schedule_rule
from octotrain.time_limits import time_limit_rule

MAX_DATA_INPUTS = 10
MAX_MOUNTS = 10
MAX_INPUT_MODELS = 10
MAX_NODES = 4096
MAX_VERSION_NUMBER = 2**31 - 1
PRIORITY_RANGE = (-50, 50)
UID_RANGE = (0, 65535)
DEFAULT_UID = 1000
MAX_RETRAIN_DATASETS = 10
# Seconds, or null for no limit (octotrain.time_limits).
TimeLimit = Annotated[StrictInt | None, AfterValidator(time_limit_rule)]
# A cron expression (UTC) or one of Airflow's presets, e.g. "0 3 * * *" or "@daily".
Schedule = Annotated[StrictStr, Field(min_length=1, max_length=64), AfterValidator(schedule_rule)]


class DataRef(Document):
    """A data input: a dataset version (``{"dataset": "iris", "version": "v1"}``) or a data
    cache (``{"cache": "iris-cache"}``)."""

    dataset: RefName | None = None
    version: RefVersion | None = None
    cache: RefName | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if self.cache is not None and (self.dataset is not None or self.version is not None):
            raise ValueError("give either a cache or a dataset and version, not both")
        if self.cache is None and (self.dataset is None or self.version is None):
            raise ValueError("a dataset input needs both dataset and version")
        return self

    @property
    def is_cache(self) -> bool:
        return self.cache is not None

    @property
    def label(self) -> str:
        """The input's folder name under ``DATASET`` (docs/concepts/environment-contract.md)."""
        return self.cache if self.cache is not None else f"{self.dataset}_{self.version}"


class ModelVersionRef(Document):
    repository: RefName
    version: StrictInt = Field(ge=1, le=MAX_VERSION_NUMBER)

    @property
    def label(self) -> str:
        return f"{self.repository}_{self.version}"


class TaskSpec(Document):
    """A training task as a user writes it (UI form, REST body or YAML file)."""

    project: RefName
    name: Name
    description: Description = ""
    resource_spec: RefName
    node_count: StrictInt = Field(default=1, ge=1, le=MAX_NODES)
    priority: StrictInt = Field(default=0, ge=PRIORITY_RANGE[0], le=PRIORITY_RANGE[1])
    algorithm: RefName
    # The version of the algorithm's uploaded code its runs stage into CODE: the newest one
    # when the task is saved without it, then kept (new uploads change no saved task).
    code_version: StrictInt | None = Field(default=None, ge=1, le=MAX_VERSION_NUMBER)
    parameters: dict[Annotated[StrictStr, Field(max_length=64)], Scalar] = Field(
        default_factory=dict
    )
    env: dict[Annotated[StrictStr, Field(max_length=128)], TextValue] = Field(default_factory=dict)
    run_as_uid: StrictInt = Field(default=DEFAULT_UID, ge=UID_RANGE[0], le=UID_RANGE[1])
    training_kind: Literal["regular", "incremental"] = "regular"
    # The repository the trained model is archived into (the output repository).
    model_repository: RefName
    # Whether a run must write a model to OUTPUT. An evaluation or metrics-only algorithm's
    # task sets false: a run whose nodes all succeeded but wrote nothing then succeeds with no
    # model version (files it does write are still archived). True: such a run fails.
    model_required: StrictBool = True
    input_models: Annotated[list[ModelVersionRef], Field(max_length=MAX_INPUT_MODELS)] = Field(
        default_factory=list
    )
    data_inputs: Annotated[list[DataRef], Field(max_length=MAX_DATA_INPUTS)] = Field(
        default_factory=list
    )
    mounts: Annotated[list[DataRef], Field(max_length=MAX_MOUNTS)] = Field(default_factory=list)
    # Scheduled retraining: the DAG's cron schedule, and/or the datasets (among data_inputs)
    # whose next published version starts a run. Such runs use each dataset input's newest
    # published version.
    schedule: Schedule | None = None
    retrain_on: Annotated[list[RefName], Field(max_length=MAX_RETRAIN_DATASETS)] = Field(
        default_factory=list
    )
    # Time limits of every run (a run's conf may change them): how long a node may wait for
    # resources (Kubernetes: its pod pending) and train; null: none.
    max_wait_seconds: TimeLimit = None
    max_training_seconds: TimeLimit = None
    # Report a node silent (no log line, no metrics point) this long, and maybe stop it as
    # hung (octotrain.hang_detection); null: not watched.
    hang_detection: HangDetection | None = None
    # How many times a run's nodes are started again from their checkpoints after a node was
    # lost for a reason outside its training (octotrain.restarts); 0: never; null: the default.
    max_node_restarts: StrictInt | None = Field(default=None, ge=0, le=MAX_NODE_RESTARTS)

    @property
    def node_restarts(self) -> int:
        """The restarts a run may make (``max_node_restarts``, or the default when unset)."""
        if self.max_node_restarts is None:
            return DEFAULT_MAX_NODE_RESTARTS
        return self.max_node_restarts

    @property
    def retrains(self) -> bool:
        """Whether runs start by themselves (cron or a published dataset version)."""
        return self.schedule is not None or bool(self.retrain_on)

    def stored(self) -> dict[str, Any]:
        """The document as the catalog keeps it (JSON, without empty optional parts)."""
        return self.model_dump(mode="json", exclude_none=True)


def saved_task_spec(document: Mapping[str, Any]) -> TaskSpec:
    """A saved task's document, typed, without judging it again.

    It was judged when it was saved, and ``validate`` judges it again (against the catalog as
    it is then) when it runs; a rule made stricter since must not make an old task unreadable
    where it is only shown, listed or turned into a DAG. Absent fields take their defaults.
    """
    fields: dict[str, Any] = {
        name: document[name] for name in TaskSpec.model_fields if name in document
    }
    for name, model in (("data_inputs", DataRef), ("mounts", DataRef),
                        ("input_models", ModelVersionRef)):  # fmt: skip
        fields[name] = [model.model_construct(**ref) for ref in document.get(name, [])]
    return TaskSpec.model_construct(**fields)
