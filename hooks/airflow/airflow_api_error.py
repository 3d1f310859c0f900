"""The error of Airflow's REST API, apart from its client (``hooks.airflow.airflow_rest``): the
command line's error reporting catches it in every command, and must not import an HTTP client for
that (``bench.cli``)."""

from __future__ import annotations


class AirflowApiError(RuntimeError):
    """Airflow answered with an error (``status``, and Airflow's ``reason`` where it gives
    one), or could not be reached (``status`` 0); the message says which."""

    def __init__(self, message: str, *, status: int = 0, reason: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
