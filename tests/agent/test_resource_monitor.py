"""The resource monitor beside a training process: CPU and memory of its process tree, the
first sample soon (a short training still shows its usage), missing packages named."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from agent.resource_monitor import ResourceMonitor

BUSY = "import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"


def samples_of(seconds: float, path: Path, **options: float) -> list[dict]:
    process = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=seconds)])
    monitor = ResourceMonitor(process.pid, path, **options)
    monitor.start()
    process.wait()
    time.sleep(0.1)
    monitor.stop()
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_busy_process_is_sampled(tmp_path: Path) -> None:
    lines = samples_of(1.5, tmp_path / "resources.jsonl", every=0.3)
    samples = [line for line in lines if "cpu_percent" in line]
    assert len(samples) >= 3
    assert max(sample["cpu_percent"] for sample in samples) > 50  # a spinning core
    assert all(
        sample["memory_bytes"] > 0 and 0 < sample["memory_percent"] < 100 for sample in samples
    )
    missing = [line["missing"] for line in lines if "missing" in line]
    try:
        import pynvml  # noqa: F401
    except ImportError:
        assert missing == [["pynvml"]]  # named once, so the page can say so


def test_a_short_training_still_gets_a_sample(tmp_path: Path) -> None:
    lines = samples_of(0.9, tmp_path / "resources.jsonl")  # shorter than the sampling period
    assert any("cpu_percent" in line for line in lines)
