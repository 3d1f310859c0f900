"""Timestamps as the API server writes them (in ``metadata`` and ``status``, and before each
line of a log read with ``timestamps=true``), and read back."""

from __future__ import annotations

import time
from datetime import UTC, datetime


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
