"""A script with no metrics code gets a chart: its algorithm's metric definition is extracted
from the train log by the local launcher's node process, end to end through Airflow's
``dag.test()`` on the embedded default (SQLite, a local folder store)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from octotrain.settings import REPO_ROOT


def test_a_plain_script_gets_the_chart_its_algorithm_defines(tmp_path: Path) -> None:
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
    runner = REPO_ROOT / "tests" / "e2e" / "log_metrics_runner.py"
    completed = subprocess.run([sys.executable, str(runner)], env=env, capture_output=True,
                               text=True, cwd=REPO_ROOT, timeout=600, check=False)  # fmt: skip
    results = [
        json.loads(line.removeprefix("RESULT "))
        for line in completed.stdout.splitlines()
        if line.startswith("RESULT ")
    ]
    assert len(results) == 1, (completed.stdout + completed.stderr)[-6000:]
    [result] = results
    assert result["state"] == "success", result
    assert result["problems"] == []
    assert result["charts"] == {
        "损失": {"x": [1, 2, 3, 4, 5, 6], "lines": {"损失": [1.0, 0.5, 0.3333, 0.25, 0.2, 0.1]}}
    }
    assert result["final_metrics"] == {"损失": {"step": 6, "损失": 0.1}}
    # The chart's total, the run's "epochs": the unmodified script's progress, all done.
    assert result["totals"] == [6.0]
    assert result["progress"] == [{"phase": "done", "percent": 100.0, "current": 6.0}]
