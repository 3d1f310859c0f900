"""Masking secrets where a run's record is shown (lineage, the catalog's copy of the plan):
a variable or parameter whose name says it holds a secret is shown as ``***``. The names are
those Airflow itself hides (``[core] sensitive_var_conn_names`` defaults)."""

from __future__ import annotations

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
