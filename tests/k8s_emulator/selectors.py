"""Label and field selectors, parsed the way the API server parses them, so that a selector
the real server would reject (or match differently) does the same here: ``find_pod`` relies
on ``already_checked!=True`` matching pods that lack the label, and on ``!airflow-worker``."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class SelectorError(ValueError):
    """A selector the API server would answer with 400 Bad Request."""


@dataclass(frozen=True)
class Requirement:
    """One comma-separated term of a label selector."""

    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator in ("=", "in"):
            return present and value in self.values
        if self.operator in ("!=", "notin"):
            return not present or value not in self.values
        if self.operator == "exists":
            return present
        return not present  # "!"


_KEY = r"(?:[a-z0-9A-Z](?:[-a-z0-9A-Z_.]*[a-z0-9A-Z])?/)?[a-z0-9A-Z](?:[-a-z0-9A-Z_.]*[a-z0-9A-Z])?"
_VALUE = r"(?:[a-z0-9A-Z](?:[-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?"
_SET = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s+\(\s*([^)]*)\)\s*$")
_EQUALITY = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*({_VALUE})\s*$")
_EXISTS = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


def _split_terms(selector: str) -> list[str]:
    """Split on the commas that are not inside ``in (a,b)`` value sets."""
    terms: list[str] = []
    depth = 0
    current = ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [term for term in terms if term.strip()]


def parse_label_selector(selector: str | None) -> list[Requirement]:
    """The requirements of a label selector; an empty selector selects everything."""
    requirements: list[Requirement] = []
    for term in _split_terms(selector or ""):
        if match := _SET.match(term):
            values = frozenset(v.strip() for v in match[3].split(",") if v.strip())
            requirements.append(Requirement(match[1], match[2], values))
        elif match := _EQUALITY.match(term):
            operator = "!=" if match[2] == "!=" else "="
            requirements.append(Requirement(match[1], operator, frozenset([match[3]])))
        elif match := _EXISTS.match(term):
            requirements.append(Requirement(match[2], "!" if match[1] else "exists"))
        else:
            raise SelectorError(f"unable to parse requirement: {term.strip()!r}")
    return requirements


def labels_match(requirements: list[Requirement], obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(requirement.matches(labels) for requirement in requirements)


def _path(*keys: str) -> Callable[[dict[str, Any]], str]:
    def get(obj: dict[str, Any]) -> str:
        value: Any = obj
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    return get


_COMMON_FIELDS = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}
# The field labels each kind supports on a real API server (others are a 400).
FIELDS: dict[str, dict[str, Callable[[dict[str, Any]], str]]] = {
    "pods": {
        **_COMMON_FIELDS,
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": _path("spec", "hostNetwork"),
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "events": {
        **_COMMON_FIELDS,
        **{
            f"involvedObject.{key}": _path("involvedObject", key)
            for key in (
                "kind",
                "namespace",
                "name",
                "uid",
                "apiVersion",
                "resourceVersion",
                "fieldPath",
            )
        },
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _path("source", "component"),
        "type": _path("type"),
    },
}


@dataclass(frozen=True)
class FieldRequirement:
    getter: Callable[[dict[str, Any]], str]
    equal: bool
    value: str

    def matches(self, obj: dict[str, Any]) -> bool:
        return (self.getter(obj) == self.value) == self.equal


def parse_field_selector(selector: str | None, kind: str) -> list[FieldRequirement]:
    """The requirements of a field selector on objects of ``kind`` (``pods``, ``events``,
    ``services`` ...)."""
    fields = FIELDS.get(kind, _COMMON_FIELDS)
    requirements: list[FieldRequirement] = []
    for term in _split_terms(selector or ""):
        match = re.match(r"^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not match:
            raise SelectorError(f"invalid selector: '{selector}'; can't understand '{term}'")
        name, operator, value = match.groups()
        if name not in fields:
            raise SelectorError(f'field label not supported: "{name}"')
        requirements.append(FieldRequirement(fields[name], operator != "!=", value))
    return requirements


def fields_match(requirements: list[FieldRequirement], obj: dict[str, Any]) -> bool:
    return all(requirement.matches(obj) for requirement in requirements)
