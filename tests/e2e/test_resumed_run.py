"""A run resumed from its checkpoint, end to end through Airflow's ``dag.test()`` on the
embedded default (SQLite, a local folder store, the local launcher): a 2-node run whose rank 0
saves a checkpoint and is lost fails; a run resuming it restores that checkpoint into rank 0's
CHECKPOINT (rank 1, which never started, starts empty), succeeds, and is recorded as resuming
the first, in the catalog and in its model version's lineage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from octotrain.contracts import NodeLogNames
from octotrain.settings import REPO_ROOT


def test_a_failed_run_is_resumed_from_its_checkpoint(tmp_path: Path) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AIRFLOW", "OCTOTRAIN_"))
    } | {
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path / 'airflow.db'}",
        "OCTOTRAIN_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": str(REPO_ROOT),
    }
    migrate = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env,
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert migrate.returncode == 0, migrate.stdout[-3000:] + migrate.stderr[-3000:]
    runner = REPO_ROOT / "tests" / "e2e" / "dag_test_runner.py"
    completed = subprocess.run([sys.executable, str(runner), "resumed"], env=env,
                               capture_output=True, text=True, cwd=REPO_ROOT, timeout=600,
                               check=False)  # fmt: skip
    results = [
        json.loads(line.removeprefix("RESULT "))
        for line in completed.stdout.splitlines()
        if line.startswith("RESULT ")
    ]
    assert len(results) == 1, (completed.stdout + completed.stderr)[-6000:]
    resumed: dict[str, Any] = results[0]
    earlier = resumed["earlier"]

    assert earlier["run"]["state"] == "failed", earlier
    assert resumed["state"] == "success", resumed
    assert resumed["run"]["resumed_from"] == earlier["run"]["id"]
    assert resumed["run"]["lineage_resumed_from"]["run"] == earlier["run"]["id"]
    runs = tmp_path / "state" / "runs" / str(resumed["task_id"])
    logs = runs / resumed["run"]["run_key"] / "logs"
    rank_0, rank_1 = (NodeLogNames(task_id=resumed["task_id"], node_index=f"distributed-{rank}")
                      for rank in (0, 1))  # fmt: skip
    init = (logs / rank_0.init).read_text()
    assert "restored checkpoint: 1 files, 0.0 MiB into CHECKPOINT from run " in init
    assert "node distributed-0 (written " in init
    assert "no checkpoint to restore: CHECKPOINT is empty" in (logs / rank_1.init).read_text()
    assert "resumed from step-50.pt" in (logs / rank_0.train).read_text()
    earlier_sidecar = runs / earlier["run"]["run_key"] / "logs" / rank_0.sidecar
    assert "checkpoint synced: 1 files" in earlier_sidecar.read_text()  # at its end, failed
