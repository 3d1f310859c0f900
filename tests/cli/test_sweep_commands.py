"""Sweeps from the command line without Airflow: a document that cannot run is refused naming
its fields, one that can is created, listed, shown and stopped before it started; there is no
best trial to run again yet."""

from __future__ import annotations

import pytest

from hooks.storage.catalog import CatalogHook
from hooks.storage.object_store import default_object_store
from octotrain.catalog.named_objects import Algorithms
from tests.cli.conftest import Cli
from tests.factories import ADMIN, add_task

SWEEP_YAML = """\
name: cli-search
parameters:
  lr: {type: float, low: 0.001, high: 0.5, log: true}
objective: {chart: loss, series: loss}
budget: {trials: 4}
concurrency: 2
"""


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_create_list_show_and_stop_a_sweep(cli: Cli, catalog: CatalogHook) -> None:
    with catalog.session() as session:
        Algorithms(session, ADMIN, default_object_store()).create(
            "demo",
            {
                "name": "cli-toy",
                "image": "python:3.11",
                "command": ["python", "t.py"],
                "sample_type": "table",
                "parameters": [{"name": "lr", "type": "float", "min": 0.0, "max": 1.0}],
                "metric_definitions": [{"name": "loss", "regex": "loss=(?P<loss>\\\\S+)"}],
            },
        )
    task_id = add_task(catalog, name="cli-swept", algorithm="cli-toy", parameters={})
    wrong = cli.write("wrong.yaml", SWEEP_YAML.replace("chart: loss", "chart: acc"))
    refused = cli("sweep", "create", str(task_id), "-f", wrong)
    assert refused.exit_code == 1
    assert "objective.chart: 'acc' is not a chart algorithm cli-toy writes" in refused.stderr
    created = cli.json("sweep", "create", str(task_id), "-f", cli.write("s.yaml", SWEEP_YAML))
    assert (created["name"], created["state"], created["trials"]) == ("cli-search", "created", [])
    assert created["spec"]["parameters"]["lr"]["log"] is True
    listed = cli.json("sweep", "list", str(task_id))
    assert [(s["id"], s["state"]) for s in listed] == [(created["id"], "created")]
    shown = cli("sweep", "show", str(created["id"]))
    assert shown.exit_code == 0 and "cli-search" in shown.stdout
    stopped = cli.json("sweep", "stop", str(created["id"]))
    assert (stopped["state"], stopped["message"]) == (
        "stopped",
        f"Stopped by {cli_user()} before it started",
    )
    again = cli("sweep", "rerun-best", str(created["id"]))
    assert again.exit_code == 1 and "has no finished trial yet" in again.stderr


def cli_user() -> str:
    from cli.session import cli_scope

    return cli_scope().username
