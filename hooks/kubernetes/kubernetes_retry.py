"""Retries of Kubernetes API calls that failed for a passing reason, as the cncf.kubernetes
provider retries its own (``generic_api_retry``): an API server that is busy (429, waiting as
long as its ``Retry-After`` says), restarting or behind a failing proxy (500, 502, 503, 504), or
a connection that broke (the request may not have arrived, or its answer was lost). Anything
else, such as a 422 for an object the server refuses, is the caller's to handle at once.

Unlike the provider's, a 409 is not retried: ``KubernetesRuns`` reads it as "already there"."""

from __future__ import annotations

import logging

import tenacity
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

log = logging.getLogger(__name__)

TRANSIENT_STATUS_CODES = frozenset({429, 500, 502, 503, 504})
HTTP_TOO_MANY_REQUESTS = 429
ATTEMPTS = 5
WAIT_MIN_SECONDS = 1.0
WAIT_MAX_SECONDS = 15.0


def is_transient(error: BaseException) -> bool:
    """Worth another try: a transient status, or a connection that broke."""
    if isinstance(error, ApiException):
        return error.status in TRANSIENT_STATUS_CODES
    return isinstance(error, HTTPError)


class RetryAfterOrExponential(tenacity.wait.wait_base):
    """The server's ``Retry-After`` on a 429, else exponential backoff."""

    def __init__(self, *, minimum: float, maximum: float) -> None:
        self.exponential = tenacity.wait_exponential(min=minimum, max=maximum)
        self.maximum = maximum

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        if isinstance(error, ApiException) and error.status == HTTP_TOO_MANY_REQUESTS:
            after = (error.headers or {}).get("Retry-After", "")
            if str(after).isdigit():
                return min(float(after), self.maximum)
        return float(self.exponential(retry_state))


def api_retrying(
    *,
    attempts: int = ATTEMPTS,
    wait_min: float = WAIT_MIN_SECONDS,
    wait_max: float = WAIT_MAX_SECONDS,
) -> tenacity.Retrying:
    """A retrier: ``api_retrying().copy()(function, **kwargs)`` calls ``function`` until it
    succeeds, fails for good, or has been tried ``attempts`` times (a copy per call, so that
    concurrent calls do not share their attempt counts)."""
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=RetryAfterOrExponential(minimum=wait_min, maximum=wait_max),
        retry=tenacity.retry_if_exception(is_transient),
        reraise=True,
        before_sleep=tenacity.before_sleep_log(log, logging.WARNING),
    )
