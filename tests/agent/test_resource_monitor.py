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


def test_a_training_that_exited_unreaped_gets_no_empty_sample(tmp_path: Path) -> None:
    """Between its exit and its parent's wait the process is a zombie, whose memory psutil
    reads as 0: a sample then would drop the chart to 0 at the end."""
    process = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=0.3)])
    path = tmp_path / "resources.jsonl"
    monitor = ResourceMonitor(process.pid, path, every=0.1)
    monitor.start()
    deadline = time.monotonic() + 10
    while not monitor.done.is_set() and monitor.thread.is_alive():  # it stops by itself
        assert time.monotonic() < deadline, "the monitor kept sampling a zombie"
        monitor.thread.join(timeout=0.1)
    process.wait()
    samples = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(sample["memory_bytes"] > 0 for sample in samples if "memory_bytes" in sample)


def test_a_short_training_still_gets_a_sample(tmp_path: Path) -> None:
    lines = samples_of(0.9, tmp_path / "resources.jsonl")  # shorter than the sampling period
    assert any("cpu_percent" in line for line in lines)
