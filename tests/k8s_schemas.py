"""Kubernetes' own OpenAPI schemas (``kubernetes-validate``'s copy of every release's), strict:
an unknown field is an error, as the API server's strict field validation makes it. Every object
a client creates or patches is checked against the oldest release the README supports, so a pod
field the launcher relies on that arrived later (or a typo the real server would refuse) fails
here, with the API server's 422 ``Invalid`` shape naming each field.

``kubernetes_validate.validate`` reads and parses the release's definitions (a 1.2 MB JSON
file) on every call, about 25 ms a check here; the validators are built once per kind and kept
for the life of the process (the first check of a process takes 15-25 ms), after which a check
of a pod costs about 0.4 ms."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any

import jsonschema
from kubernetes_validate.utils import schema_contents
from referencing import Registry, Resource

# The oldest Kubernetes release the README supports (native sidecars arrived in 1.29).
KUBERNETES_VERSION = "1.29.0"
_SCHEMAS = f"kubernetes-json-schema/v{KUBERNETES_VERSION}-local-strict"


class UnknownSchema(LookupError):
    """``kubernetes-validate`` has no schema for this kind and API version."""


def schema_causes(obj: dict[str, Any]) -> list[dict[str, str]]:
    """The apiserver-style causes (``reason``, ``message``, ``field``) of every place where
    ``obj`` breaks its kind's schema; empty when it is valid."""
    return fragment_causes(str(obj.get("kind", "")), str(obj.get("apiVersion", "")), obj)


def fragment_causes(kind: str, api_version: str, obj: Any) -> list[dict[str, str]]:
    """As ``schema_causes``, for a part of an object that names no kind of its own (an
    ``EnvVar``, a ``Toleration``, a ``Volume`` ...)."""
    validator = _validator(kind, api_version)
    causes = [cause for error in validator.iter_errors(obj) for cause in _causes(error)]
    return sorted(causes, key=lambda cause: cause["field"])


@cache
def _validator(kind: str, api_version: str) -> jsonschema.protocols.Validator:
    """The strict validator of one kind, built once (see the module docstring)."""
    group = api_version.split("/", 1)[0].split(".", 1)[0] if "/" in api_version else ""
    version = api_version.rsplit("/", 1)[-1]
    file = f"{kind.lower()}-{group}-{version}.json" if group else f"{kind.lower()}-{version}.json"
    try:
        schema = schema_contents(f"{_SCHEMAS}/{file}", KUBERNETES_VERSION)
    except FileNotFoundError as error:
        raise UnknownSchema(f"no schema for {kind} {api_version}") from error
    registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
    registry = Resource.from_contents(_definitions()) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


@lru_cache(maxsize=1)
def _definitions() -> Any:
    return schema_contents(f"{_SCHEMAS}/_definitions.json", KUBERNETES_VERSION)


def _causes(error: jsonschema.ValidationError) -> Iterable[dict[str, str]]:
    where = _field(error.absolute_path)
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        for key in error.validator_value:
            if key not in instance:
                yield _cause("FieldValueRequired", _join(where, key), "Required value")
    elif error.validator == "additionalProperties" and isinstance(instance, dict):
        known = set(error.schema.get("properties") or {})
        for key in sorted(set(instance) - known):
            yield _cause("FieldValueInvalid", _join(where, key), f'unknown field "{key}"')
    elif error.validator == "enum":
        supported = ", ".join(f'"{value}"' for value in error.validator_value if value)
        yield _cause(
            "FieldValueNotSupported",
            where,
            f'Unsupported value: "{instance}": supported values: {supported}',
        )
    else:
        yield _cause("FieldValueInvalid", where, f"Invalid value: {error.message}")


def _cause(reason: str, field: str, message: str) -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


def _field(path: Iterable[Any]) -> str:
    """``spec.containers[0].image``: the API server's spelling of a field path."""
    parts: list[str] = []
    for part in path:
        if isinstance(part, int) and parts:
            parts[-1] += f"[{part}]"
        else:
            parts.append(str(part))
    return ".".join(parts)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
