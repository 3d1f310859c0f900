"""``task run`` records its run as queued in the catalog before Airflow is asked, as the REST
trigger does (``octotrain.run_lifecycle.record_triggered``), and a trigger Airflow refuses
leaves no queued run behind (``forget_trigger``)."""

from __future__ import annotations

import json

import httpx
import pytest
from sqlalchemy import select

from hooks.airflow.airflow_rest import AirflowRestClient
from hooks.storage.catalog import CatalogHook
from octotrain.catalog.models import Run, RunState
from octotrain.settings import get_settings
from tests.cli.conftest import Cli


def _airflow(monkeypatch: pytest.MonkeyPatch, answer: httpx.MockTransport) -> None:
    def client(_settings: object) -> AirflowRestClient:
        fake = AirflowRestClient("http://airflow.test")
        fake.http = httpx.Client(base_url=fake.base_url, transport=answer)
        return fake

    monkeypatch.setattr(AirflowRestClient, "from_settings", staticmethod(client))


def _runs(catalog: CatalogHook) -> list[tuple[str, RunState, str, int]]:
    with catalog.session() as session:
        return [
            (run.airflow_run_id, run.state, run.triggered_by, run.node_count)
            for run in session.scalars(select(Run).order_by(Run.id))
        ]


def test_task_run_records_its_run_queued_before_airflow_starts_it(
    cli: Cli, catalog: CatalogHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    queued_when_triggered: list[list[tuple[str, RunState, str, int]]] = []

    def airflow(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            queued_when_triggered.append(_runs(catalog))
            body = json.loads(request.content)
            return httpx.Response(200, json={"dag_run_id": body["dag_run_id"]})
        return httpx.Response(200, json={})  # the DAG exists; it is unpaused

    _airflow(monkeypatch, httpx.MockTransport(airflow))
    result = cli("task", "run", "1", "--conf", '{"node_count": 1}', "--json")
    assert result.exit_code == 0, result.output
    # From its first line: Airflow's configuration may log a line first, in this process.
    started = json.loads(result.stdout[result.stdout.index("{\n") :])
    queued = (started["run_id"], RunState.QUEUED, get_settings().airflow_username, 1)
    assert queued_when_triggered == [[queued]]
    assert _runs(catalog) == [queued]
    with catalog.session() as session:
        assert session.get(Run, started["run"]).airflow_run_id == started["run_id"]


def test_a_trigger_airflow_refuses_leaves_no_queued_run(
    cli: Cli, catalog: CatalogHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    _airflow(monkeypatch, httpx.MockTransport(lambda _: httpx.Response(400, json={})))
    assert cli("task", "run", "1").exit_code == 1
    assert _runs(catalog) == []
