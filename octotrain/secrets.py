"""Secrets: a variable or parameter whose name says it holds a secret (the names Airflow itself
hides, ``[core] sensitive_var_conn_names`` defaults) is shown as ``***`` wherever a run's record
is shown (lineage, the catalog's copy of the plan), and never enters what Airflow keeps.

A run's settings (its conf, the DAG's Params) name a secret by ``***``: "the value saved with the
task". A new value typed when a run is started (Octotrain's API, console or command line) is
held apart from the conf (``held_apart``), in the catalog's record of the run, and put back only
where the run is planned (``with_held_secrets``); the conf that Airflow stores and shows carries
``***`` in its place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
SENSITIVE_WORDS = (
    "access_token",
    "api_key",
    "apikey",
    "authorization",
    "credential",
    "passphrase",
    "passwd",
    "password",
    "private_key",
    "secret",
    "token",
    "keyfile_dict",
    "service_account",
)


def is_sensitive(name: str) -> bool:
    lowered = name.lower().replace("-", "_")
    return any(word in lowered for word in SENSITIVE_WORDS)


def masked(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with the values of sensitive names replaced by ``***``."""
    return {name: MASK if is_sensitive(name) else value for name, value in values.items()}


# The kinds of value a run's settings may hold a secret in: its variables and its parameters.
SECRET_KINDS = ("env", "parameters")


def held_apart(conf: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``conf`` with every secret value given in it replaced by ``***``, and those values
    (``{"env": {...}, "parameters": {...}}``): what a trigger sends Airflow, and what it keeps
    in the catalog for the run. A top-level key other than the run settings is a parameter."""
    shown = dict(conf)
    held: dict[str, dict[str, Any]] = {kind: {} for kind in SECRET_KINDS}
    env = conf.get("env")
    if isinstance(env, Mapping):
        shown["env"] = dict(env)
        for name, value in env.items():
            if _typed_secret(name, value):
                held["env"][name] = value
                shown["env"][name] = MASK
    for name, value in conf.items():
        if name != "env" and _typed_secret(name, value):
            held["parameters"][name] = value
            shown[name] = MASK
    return shown, held


def with_held_secrets(
    conf: Mapping[str, Any], held: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """``conf`` with the secrets held apart for the run put back in place of their masks."""
    merged = dict(conf)
    if held.get("env"):
        merged["env"] = dict(conf.get("env") or {}) | dict(held["env"])
    return merged | dict(held.get("parameters") or {})


def masked_text(text: str, values: Iterable[Any]) -> str:
    """``text`` with every secret value in it replaced by ``***`` (a log's lines, say)."""
    for value in sorted({str(value) for value in values}, key=len, reverse=True):
        if value and value != MASK:
            text = text.replace(value, MASK)
    return text


def keeps_saved_value(name: str, value: Any) -> bool:
    """Whether a run's setting ``name`` = ``value`` means "the value saved with the task"."""
    return value == MASK and is_sensitive(name)


def _typed_secret(name: str, value: Any) -> bool:
    return is_sensitive(str(name)) and value is not None and value != MASK
