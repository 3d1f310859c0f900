import json
import subprocess
import sys
from pathlib import Path

from agent.run_training import main

WRAPPER = Path(__file__).resolve().parents[2] / "agent" / "run_training.py"


def test_missing_command_is_exit_127_with_a_message(tmp_path: Path) -> None:
    code = main(
        [
            "--train-log",
            str(tmp_path / "t.log"),
            "--sidecar-log",
            str(tmp_path / "s.log"),
            "--",
            "no-such-program-xyz",
        ]
    )
    assert code == 127
    assert "cannot start no-such-program-xyz" in (tmp_path / "t.log").read_text()


def test_wrapper_runs_without_the_project_installed(tmp_path: Path) -> None:
    """The agent is copied into images without Octotrain: it must import nothing of it (only
    its own folder, the script's, is on the path; no PYTHONPATH, no site packages of the user)."""
    result = subprocess.run(
        [
            sys.executable,
            "-E",
            "-s",
            str(WRAPPER),
            "--train-log",
            str(tmp_path / "t.log"),
            "--sidecar-log",
            str(tmp_path / "s.log"),
            "--",
            sys.executable,
            "-c",
            "import sys; print('out'); print('err', file=sys.stderr); sys.exit(4)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 4
    assert sorted((tmp_path / "t.log").read_text().split()) == ["err", "out"]
    assert result.stdout.split() == (tmp_path / "t.log").read_text().split()


def test_resources_are_sampled_and_the_exit_status_recorded(tmp_path: Path) -> None:
    resources, exit_file = tmp_path / "resources.jsonl", tmp_path / "exit-code"
    code = main(
        [
            "--train-log", str(tmp_path / "t.log"), "--sidecar-log", str(tmp_path / "s.log"),
            "--resources", str(resources), "--exit-file", str(exit_file), "--",
            sys.executable, "-c", "import time; data = bytearray(50_000_000); time.sleep(2.6)",
        ]
    )  # fmt: skip
    assert code == 0 and exit_file.read_text() == "0"
    samples = [json.loads(line) for line in resources.read_text().splitlines()]
    measured = [s for s in samples if "memory_bytes" in s]
    assert measured and max(s["memory_bytes"] for s in measured) > 50_000_000
    assert {"timestamp", "cpu_percent", "memory_percent"} <= set(measured[0])
    assert samples[0].get("missing") in (None, ["pynvml"])  # psutil is here; pynvml may not be
