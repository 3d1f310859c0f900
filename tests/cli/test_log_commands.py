"""``octotrain task logs``: list, print, the last lines, follow a live file until the run ends,
and search like grep."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import update

from hooks.storage.catalog import CatalogHook
from octotrain.catalog.models import Run, RunState
from tests.cli.conftest import Cli
from tests.plan_rows import recorded

NODES = ["distributed-0", "distributed-1"]


@pytest.fixture
def run_folder(cli: Cli, catalog: CatalogHook, octotrain_env: Path) -> Path:
    with catalog.session() as session:
        plan = recorded(run_key="manual__1-abc", node_indices=NODES)
        session.add(Run(task_id=1, airflow_run_id="manual__1", state=RunState.RUNNING,
                        node_count=2, plan=plan))  # fmt: skip
    logs = octotrain_env / "runs" / "1" / "manual__1-abc" / "logs"
    logs.mkdir(parents=True)
    (logs / "train-1-distributed-0.log").write_text(
        "".join(f"\x1b[1mepoch {n}\x1b[0m loss {1 / n:.3f}\n" for n in range(1, 301))
    )
    (logs / "train-1-distributed-1.log").write_text("rank 1 ready\nrank 1 ERROR disk full\n")
    return logs


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_list_print_and_last_lines(cli: Cli, run_folder: Path) -> None:
    listing = cli("task", "logs", "1").stdout.splitlines()
    assert [line.split()[0] for line in listing] == ["distributed-0", "distributed-1"]
    whole = cli("task", "logs", "1", "--node", "distributed-1").stdout
    assert whole == "rank 1 ready\nrank 1 ERROR disk full\n"
    last = cli("task", "logs", "1", "--node", "distributed-0", "--lines", "2").stdout
    assert last == "epoch 299 loss 0.003\nepoch 300 loss 0.003\n"
    missing = cli("task", "logs", "1", "--node", "distributed-5")
    assert missing.exit_code == 1 and "no node 'distributed-5'" in missing.stderr


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_follow_prints_new_lines_until_the_run_ends(
    cli: Cli, run_folder: Path, catalog: CatalogHook
) -> None:
    log = run_folder / "train-1-distributed-1.log"

    def training() -> None:
        time.sleep(0.5)
        with log.open("a") as handle:
            handle.write("epoch 2 lo")
            handle.flush()
            time.sleep(1.2)
            handle.write("ss 0.1\nepoch 3 loss 0.05\n")
        time.sleep(0.3)
        with catalog.session() as session:
            session.execute(update(Run).values(state=RunState.SUCCESS))

    writer = threading.Thread(target=training)
    writer.start()
    started = time.monotonic()
    followed = cli("task", "logs", "1", "--node", "distributed-1", "--follow")
    writer.join()
    assert followed.exit_code == 0, followed.output
    assert followed.stdout.splitlines() == [
        "rank 1 ready", "rank 1 ERROR disk full", "epoch 2 loss 0.1", "epoch 3 loss 0.05",
    ]  # fmt: skip
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_grep_across_nodes_like_grep(cli: Cli, run_folder: Path) -> None:
    found = cli("task", "logs", "1", "--grep", "error", "--context", "1").stdout.splitlines()
    assert found == [
        "distributed-1/train-1-distributed-1.log-1-rank 1 ready",
        "distributed-1/train-1-distributed-1.log:2:rank 1 ERROR disk full",
    ]
    many = cli.json("task", "logs", "1", "--grep", "loss", "--node", "distributed-0")
    assert [hit["line"] for hit in many["hits"]] == list(range(1, 301))
    assert cli("task", "logs", "1", "--grep", "nowhere").exit_code == 1
    bad = cli("task", "logs", "1", "--grep", "(", "--regex")
    assert bad.exit_code == 1 and "not a valid regular expression" in bad.stderr
