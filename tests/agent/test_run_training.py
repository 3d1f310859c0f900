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
    """The agent is copied into images without Octotrain: it must import nothing of it."""
    result = subprocess.run(
        [
            sys.executable,
            "-I",
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
