"""A task's document as its page shows it: every parameter of its algorithm with the value a
run gets (the saved one, else the algorithm's default, marked as such), the environment a run
gets (the algorithm's variables with the task's own over them), and its data references in
words. Values whose names say they hold a secret are masked (``***``) as a run's record masks
them, in the page's text and in the copy its script reads (Run now sends a secret only when
the user types a new one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from octotrain.secrets import MASK, is_sensitive


@dataclass(frozen=True)
class ShownParameter:
    name: str
    type: str
    value: Any
    is_default: bool  # not set by the task: the algorithm's default applies
    secret: bool
    description: str


@dataclass(frozen=True)
class ShownVariable:
    name: str
    value: str
    from_task: bool  # set by the task (else the algorithm's own value)
    secret: bool


@dataclass(frozen=True)
class ShownTask:
    parameters: list[ShownParameter]
    env: list[ShownVariable]
    data_inputs: list[str]
    mounts: list[str]
    input_models: list[str]
    document: dict[str, Any]  # the saved document, secrets masked
    algorithm: dict[str, Any] | None  # its entry of the form's choices, secrets masked


def data_label(ref: dict[str, Any]) -> str:
    """``house-prices v1`` for a dataset version, ``cache daily-prices`` for a data cache."""
    if ref.get("cache"):
        return f"cache {ref['cache']}"
    return f"{ref.get('dataset', '?')} {ref.get('version', '?')}"


def model_label(ref: dict[str, Any]) -> str:
    return f"{ref.get('repository', '?')} v{ref.get('version', '?')}"


def _masked(name: str, value: Any) -> Any:
    return MASK if is_sensitive(name) and value not in (None, "") else value


def masked_env(env: dict[str, Any]) -> dict[str, Any]:
    return {name: _masked(name, value) for name, value in env.items()}


def shown_task_document(document: dict[str, Any], algorithm: dict[str, Any] | None) -> ShownTask:
    """``document`` (a saved task) with ``algorithm`` (its entry of the form's choices, None
    when the algorithm is gone) filling in what the task leaves to it."""
    saved_parameters = dict(document.get("parameters", {}))
    saved_env = dict(document.get("env", {}))
    declarations = list(algorithm["parameters"]) if algorithm else []
    declared = {item["name"] for item in declarations}
    parameters = [
        ShownParameter(
            name=item["name"],
            type=item.get("type", "string"),
            value=_masked(item["name"], saved_parameters.get(item["name"], item.get("default"))),
            is_default=item["name"] not in saved_parameters,
            secret=is_sensitive(item["name"]),
            description=item.get("description", ""),
        )
        for item in declarations
    ] + [  # saved for an algorithm that no longer declares them: shown, not hidden
        ShownParameter(name, "unknown", _masked(name, value), False, is_sensitive(name), "")
        for name, value in saved_parameters.items()
        if name not in declared
    ]
    algorithm_env = dict(algorithm["env"]) if algorithm else {}
    env = [
        ShownVariable(
            name=name,
            value=_masked(name, saved_env.get(name, algorithm_env.get(name, ""))),
            from_task=name in saved_env,
            secret=is_sensitive(name),
        )
        for name in {**algorithm_env, **saved_env}
    ]
    masked_document = dict(document)
    masked_document["parameters"] = {
        name: _masked(name, value) for name, value in saved_parameters.items()
    }
    masked_document["env"] = masked_env(saved_env)
    return ShownTask(
        parameters=parameters,
        env=env,
        data_inputs=[data_label(ref) for ref in document.get("data_inputs", [])],
        mounts=[data_label(ref) for ref in document.get("mounts", [])],
        input_models=[model_label(ref) for ref in document.get("input_models", [])],
        document=masked_document,
        algorithm=algorithm | {"env": masked_env(algorithm_env)} if algorithm else None,
    )
