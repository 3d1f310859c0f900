"""Airflow's CeleryExecutor for live tests and benchmarks: the environment of the scheduler and
the workers, the workers' command lines (components of ``tests.live_airflow.live_airflow``),
and a private namespace on the Redis broker at 127.0.0.1:6379.

Isolation on the shared Redis: every key and pub/sub channel that kombu uses (queues, unacked
messages, bindings, the workers' remote-control and event channels) gets a key prefix unique
to one ``celery_broker()``, through kombu's ``global_keyprefix`` transport option. Unlike a
database index (16 of them, picked racily by concurrent sessions, and FLUSHDB wiping whoever
else picked the same), a random prefix cannot collide, and its keys alone are deleted at the
end. Results go to the test's PostgreSQL metadata database (``db+postgresql…``), never Redis.

Kept light (no pytest, no project imports): ``worker_hostname`` is imported by every Airflow
process as its ``hostname_callable``.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

REDIS_URL = "redis://127.0.0.1:6379/0"


def celery_settings(metadata_url: str, key_prefix: str) -> dict[str, str]:
    """The Airflow environment of a CeleryExecutor installation whose broker is Redis under
    ``key_prefix`` and whose result backend is the metadata database at ``metadata_url``
    (PostgreSQL; Celery's SQLAlchemy backend creates its two tables there)."""
    return {
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__CELERY__BROKER_URL": REDIS_URL,
        "AIRFLOW__CELERY_BROKER_TRANSPORT_OPTIONS__GLOBAL_KEYPREFIX": key_prefix,
        "AIRFLOW__CELERY__RESULT_BACKEND": f"db+{metadata_url}",
        # A worker reserves only as many tasks as it has free processes, so tasks beyond its
        # --concurrency wait in Redis for another worker instead of behind its running ones.
        "AIRFLOW__CELERY__WORKER_PREFETCH_MULTIPLIER": "1",
        # Workers sharing one machine share its hostname; a task instance's hostname names
        # the worker instead (worker_hostname).
        "AIRFLOW__CORE__HOSTNAME_CALLABLE": f"{__name__}.worker_hostname",
    }


def celery_workers(count: int, concurrency: int = 2) -> tuple[str, ...]:
    """Command lines (after ``airflow``) of ``count`` workers on this machine, ``w1@<host>`` …,
    each running at most ``concurrency`` task instances at once. They do not serve their logs
    over HTTP (the log server's port 8793 would be taken twice); task logs go to the remote
    log store, and to AIRFLOW_HOME/logs, which the api-server on this machine reads."""
    return tuple(
        f"celery worker --celery-hostname w{number}@%h --concurrency {concurrency} "
        "--skip-serve-logs"
        for number in range(1, count + 1)
    )


def worker_hostname() -> str:
    """Airflow's ``hostname_callable``: inside a Celery task (the worker's supervisor of a task
    instance and the task process it forks), the worker's node name (``w1@<host>``); elsewhere
    (scheduler, api-server) the machine's name, as by default."""
    from celery import current_task

    hostname = current_task.request.hostname if current_task else None
    return str(hostname) if hostname else socket.getfqdn()


@contextmanager
def celery_broker() -> Iterator[str]:
    """A fresh key prefix on the Redis broker; its keys are deleted when done (after the
    workers and the scheduler have stopped)."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError as error:
        client.close()
        raise RuntimeError(
            f"Redis on 127.0.0.1:6379 is required for Celery tests: {error}"
        ) from error
    prefix = f"octotrain-test-{uuid.uuid4().hex[:12]}:"
    try:
        yield prefix
    finally:
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)
        client.close()


def broker_keys(key_prefix: str) -> list[str]:
    """The keys under ``key_prefix`` on the broker now."""
    with redis.Redis.from_url(REDIS_URL, decode_responses=True) as client:
        return sorted(client.scan_iter(match=f"{key_prefix}*", count=1000))


def ping_workers(key_prefix: str, timeout: float = 1.0) -> set[str]:
    """The node names of the workers under ``key_prefix`` that answer a ping now."""
    from celery import Celery

    app = Celery(broker=REDIS_URL, broker_transport_options={"global_keyprefix": key_prefix})
    try:
        return {name for answer in app.control.ping(timeout=timeout) or [] for name in answer}
    finally:
        app.close()
