"""What one run may change of its task: the settings a trigger passes as the DAG run's ``conf``.

A run's conf holds the algorithm's parameters by name, plus ``node_count``, ``priority``,
``env`` (merged into the task's variables), for incremental training ``input_models``,
``resume_from``, the earlier run whose checkpoint this one resumes (``octotrain.resume``), and
the time limits ``max_wait_seconds`` and ``max_training_seconds`` (``octotrain.time_limits``).
These are the DAG's Params (``dags/run_params.py``), so Airflow's trigger form shows them as
typed fields, and Airflow validates a conf against them before a run exists. ``validate``
then judges the task with the conf applied by every rule of ``octotrain.task_rules``, as if it
had been saved that way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from octotrain.catalog.models import Project, ResourceSpec
from octotrain.errors import InvalidTrigger
from octotrain.secrets import keeps_saved_value
from octotrain.time_limits import TRAINING_LIMIT, WAIT_LIMIT

RESUME_SETTING = "resume_from"
RUN_SETTING_NAMES = (
    "node_count", "priority", "env", "input_models", RESUME_SETTING, WAIT_LIMIT, TRAINING_LIMIT,
)  # fmt: skip


def run_node_limit(project: Project, spec: ResourceSpec | None) -> int:
    """The most nodes one run of a task may have (its conf may raise the saved count up to
    it): its resource spec's limit and its project's, the same limits the task rules apply."""
    return min(project.max_nodes, spec.max_nodes if spec is not None else project.max_nodes)


def with_run_settings(spec: Mapping[str, Any], conf: object) -> dict[str, Any]:
    """The task document a run uses: the saved ``spec`` with the run's ``conf`` applied.

    A key that is not one of ``RUN_SETTING_NAMES`` is an algorithm parameter; an unknown one is
    refused by the task rules (``parameters.<name>``), naming the algorithm's parameters. A
    null value means "as saved" (Airflow's form sends null for a field left empty), and so does
    ``***`` for a secret (``octotrain.secrets``): the DAG's Params show secrets that way.
    """
    if not isinstance(conf, Mapping):
        raise InvalidTrigger.one("conf", f"must be an object, got {type(conf).__name__}")
    document = dict(spec)
    parameters = dict(spec.get("parameters", {}))
    for key, value in conf.items():
        if value is None or key == RESUME_SETTING:  # which checkpoint, not the task's setting
            continue
        if key == "env":
            if not isinstance(value, Mapping):
                raise InvalidTrigger.one("conf.env", "must be an object of variable names to text")
            given = {name: text for name, text in value.items()
                     if not keeps_saved_value(name, text)}  # fmt: skip
            document["env"] = dict(spec.get("env", {})) | given
        elif keeps_saved_value(str(key), value):
            continue
        elif key in RUN_SETTING_NAMES:
            document[key] = value
        else:
            parameters[str(key)] = value
    document["parameters"] = parameters
    return document
