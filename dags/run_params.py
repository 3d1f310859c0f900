"""The Params of a training task's DAG: what one run may change, as JSON schema, so that
Airflow's "Trigger" form shows typed fields (each algorithm parameter with its type, range or
choices; node count; priority; environment overrides; incremental inputs) and Airflow refuses
a conf that does not fit before a run exists. Defaults are the task's saved values, and every
Param also takes null, which means "as saved" (Airflow's form sends null for a field left
empty; ``octotrain.run_settings`` skips it). String values carry the text rule of
``octotrain.argument_limits`` (length, no control characters) as ``maxLength``/``pattern``.

The names are those of ``octotrain.run_settings``, which ``validate`` applies and judges again
against the catalog as it is when the run starts.

Secrets (``octotrain.secrets``) never enter the Params: a secret variable or parameter has
``***`` as its default and as its only value besides null, both meaning "the value saved with
the task", so Airflow's form, its run's conf and its run Details never carry one. A new value for
one run is given through Octotrain (its console's Run now, ``octotrain task run --conf``, its
REST API), which holds it apart from the conf Airflow keeps.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Param

from octotrain.argument_limits import text_value_schema
from octotrain.catalog.models import Algorithm, ResourceSpec, TrainingTask
from octotrain.run_settings import RESUME_SETTING, run_node_limit
from octotrain.secrets import MASK, is_sensitive, masked
from octotrain.task_spec import MAX_INPUT_MODELS, MAX_VERSION_NUMBER, PRIORITY_RANGE, TaskSpec
from octotrain.time_limits import MAX_LIMIT_SECONDS, TRAINING_LIMIT, WAIT_LIMIT

JSON_TYPES = {"int": "integer", "float": "number", "bool": "boolean", "string": "string"}
RUN_SECTION = "Run"
PARAMETER_SECTION = "Algorithm parameters"


SECRET_HINT = (
    "*** is the value saved with the task; a new value for one run is given through Octotrain "
    "(Run now, octotrain task run --conf), which keeps it out of Airflow"
)


def secret_schema() -> dict[str, Any]:
    """A secret's Param schema: ``***`` (the saved value) or null, nothing Airflow would keep."""
    return {"enum": [MASK, None], "description": SECRET_HINT}


def algorithm_param(declaration: dict[str, Any], value: Any) -> Param:
    """One algorithm parameter as a Param (null: the saved value, or none when it has none)."""
    schema: dict[str, Any] = {"title": declaration["name"], "section": PARAMETER_SECTION}
    if is_sensitive(declaration["name"]):
        return Param(MASK, **schema, **secret_schema())
    kind = declaration.get("type", "string")
    if kind == "enum":
        schema["enum"] = [*declaration["choices"], None]
    else:
        schema["type"] = [JSON_TYPES[kind], "null"]
        for bound, keyword in (("min", "minimum"), ("max", "maximum")):
            if declaration.get(bound) is not None:
                schema[keyword] = declaration[bound]
    if kind == "string":
        schema |= text_value_schema(declaration.get("max_length"))
    return Param(value, description=parameter_description(declaration), **schema)


def parameter_description(declaration: dict[str, Any]) -> str:
    """What a parameter's field says under it in Airflow's form: its type, range or choices
    and default ("int, 1 to 1000, default 40"), then the algorithm's words. Airflow's form sets
    a number typed outside the range to the nearest bound, silently; the description is where
    a user sees the range before that (Airflow's REST API and Octotrain's forms refuse)."""
    kind = declaration.get("type", "string")
    parts = [kind]
    low, high = declaration.get("min"), declaration.get("max")
    if low is not None and high is not None:
        parts.append(f"{low:g} to {high:g}" if kind == "float" else f"{low} to {high}")
    elif low is not None:
        parts.append(f"at least {low}")
    elif high is not None:
        parts.append(f"at most {high}")
    if kind == "enum":
        parts.append("one of " + ", ".join(str(choice) for choice in declaration["choices"]))
    if declaration.get("max_length") is not None:
        parts.append(f"at most {declaration['max_length']} characters")
    default = declaration.get("default")
    parts.append(f"default {_shown(default)}" if default is not None else "no default")
    words = declaration.get("description")
    return ", ".join(parts) + (f". {words}" if words else "")


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def run_params(
    task: TrainingTask,
    document: TaskSpec,
    algorithm: Algorithm | None,
    spec: ResourceSpec | None,
) -> dict[str, Param]:
    """The DAG's Params for ``task``; the algorithm's only when it still exists (otherwise
    ``validate`` fails the run naming it)."""
    max_nodes = run_node_limit(task.project, spec)
    params = {
        "node_count": Param(
            document.node_count,
            type=["integer", "null"],
            minimum=1,
            maximum=max(max_nodes, 1),
            title="Nodes",
            description="How many nodes this run uses (one pod or process each)",
            section=RUN_SECTION,
        ),
        "priority": Param(
            document.priority,
            type=["integer", "null"],
            minimum=PRIORITY_RANGE[0],
            maximum=PRIORITY_RANGE[1],
            title="Priority",
            description="-50 (lowest) to 50; the pods' PriorityClass",
            section=RUN_SECTION,
        ),
    }
    for name, value, what in (
        (WAIT_LIMIT, document.max_wait_seconds, "wait for resources (a pod pending)"),
        (TRAINING_LIMIT, document.max_training_seconds, "train (then SIGTERM, grace, stop)"),
    ):
        params[name] = Param(
            value,
            type=["integer", "null"],
            minimum=1,
            maximum=MAX_LIMIT_SECONDS,
            title=name,
            description=f"Seconds each node may {what}; empty: the task's limit",
            section=RUN_SECTION,
        )
    params[RESUME_SETTING] = Param(
        None,
        type=["integer", "null"],
        minimum=1,
        title="Resume from run",
        description="A failed or stopped run's id: its nodes start from its checkpoint",
        section=RUN_SECTION,
    )
    if algorithm is None:
        return params
    saved = document.parameters
    for declaration in algorithm.parameters:
        name = declaration["name"]
        params[name] = algorithm_param(declaration, saved.get(name, declaration.get("default")))
    params["env"] = Param(
        masked({name: str(value) for name, value in algorithm.env.items()} | dict(document.env)),
        type=["object", "null"],
        properties={
            name: secret_schema()
            if is_sensitive(name)
            else {"type": "string", **text_value_schema()}
            for name in algorithm.env
        },
        additionalProperties=False,
        title="Environment variables",
        description="The algorithm's variables for this run (others are refused)",
        section=RUN_SECTION,
    )
    if document.training_kind == "incremental":
        params["input_models"] = Param(
            [ref.model_dump() for ref in document.input_models],
            type=["array", "null"],
            minItems=1,
            maxItems=MAX_INPUT_MODELS,
            items={
                "type": "object",
                "properties": {
                    "repository": {"type": "string", "minLength": 1},
                    "version": {"type": "integer", "minimum": 1, "maximum": MAX_VERSION_NUMBER},
                },
                "required": ["repository", "version"],
                "additionalProperties": False,
            },
            title="Input model versions",
            description="Model versions this incremental run starts from",
            section=RUN_SECTION,
        )
    return params
