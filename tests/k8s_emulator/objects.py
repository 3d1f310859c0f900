"""Small helpers for API objects in their JSON shape: timestamps as the API server writes
them, ``Status`` error bodies (the kubernetes client turns these into ``ApiException`` with
the right ``status``), names, and the merge patches ``patch_namespaced_*`` sends."""

from __future__ import annotations

import copy
import re
import secrets
import time
import uuid
from datetime import UTC, datetime
from typing import Any

# A DNS-1123 subdomain (pod, secret, config map names) and label (service names).
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class ApiError(Exception):
    """An API call that the server answers with a ``Status`` of failure."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(kind: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{kind} "{name}" not found', {"name": name, "kind": kind})


def already_exists(kind: str, name: str) -> ApiError:
    return ApiError(
        409, "AlreadyExists", f'{kind} "{name}" already exists', {"name": name, "kind": kind}
    )


def invalid(kind: str, name: str, cause: str) -> ApiError:
    singular = {"pods": "Pod", "services": "Service", "secrets": "Secret"}.get(kind, kind)
    return ApiError(
        422, "Invalid", f'{singular} "{name}" is invalid: {cause}', {"name": name, "kind": kind}
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def rfc3339(seconds: float | None = None) -> str:
    """A timestamp with second precision, as in ``metadata`` and ``status`` fields."""
    moment = datetime.fromtimestamp(time.time() if seconds is None else seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_nano(nanoseconds: int) -> str:
    """Go's ``time.RFC3339Nano`` (trailing zeros of the fraction dropped), which is what the
    kubelet prefixes log lines with when ``timestamps=true``."""
    seconds, fraction = divmod(nanoseconds, 10**9)
    stamp = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    digits = f"{fraction:09d}".rstrip("0")
    return f"{stamp}.{digits}Z" if digits else f"{stamp}Z"


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 timestamp (``sinceTime``)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def new_uid() -> str:
    return str(uuid.uuid4())


def generated_name(prefix: str) -> str:
    """``generateName`` plus five random characters, as the API server does."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return prefix + "".join(secrets.choice(alphabet) for _ in range(5))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: dicts merge, ``null`` removes, everything else replaces.
    Strategic merge patches on the fields the emulator lets change (labels, annotations)
    mean the same thing."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, operations: list[dict[str, Any]]) -> Any:
    """RFC 6902 JSON patch (``add``, ``remove``, ``replace``, ``test``), which the kubernetes
    client sends when a patch body is a list."""
    document = copy.deepcopy(target)
    for operation in operations:
        op = operation.get("op")
        parts = [
            p.replace("~1", "/").replace("~0", "~") for p in operation.get("path", "").split("/")
        ][1:]
        if not parts:
            raise bad_request(f"invalid JSON patch path: {operation.get('path')!r}")
        parent: Any = document
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = parts[-1]
        try:
            if op in ("add", "replace"):
                if isinstance(parent, list):
                    index = len(parent) if last == "-" else int(last)
                    if op == "add":
                        parent.insert(index, operation.get("value"))
                    else:
                        parent[index] = operation.get("value")
                else:
                    if op == "replace" and last not in parent:
                        raise KeyError(last)
                    parent[last] = operation.get("value")
            elif op == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif op == "test":
                actual = parent[int(last)] if isinstance(parent, list) else parent[last]
                if actual != operation.get("value"):
                    raise ApiError(422, "Invalid", f"testing value {operation.get('path')} failed")
            else:
                raise bad_request(f"unsupported JSON patch operation: {op!r}")
        except (KeyError, IndexError, ValueError) as error:
            raise ApiError(
                422,
                "Invalid",
                f"the server rejected our request due to an error in our request: {error}",
            ) from error
    return document
