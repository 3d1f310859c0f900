"""Resource samples of a training process, beside it in its node (a pod or the local machine).

Every few seconds one JSON line goes to the resources file: CPU % (of the cores the process
tree uses, 100 per core), memory % (of the container's limit, else of the machine) and bytes,
and per GPU visible to the process (NVML): utilisation % and memory %. psutil and pynvml come
from the user's image (as the manual says); when one is missing the first line says so
(``{"missing": ["pynvml"]}``), so that the resources page can name the package instead of
showing empty charts. No GPU: CPU and memory only.

Imports nothing of the project: this file is copied into images that do not have it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

SAMPLE_SECONDS = 2.0
# The first sample comes sooner, so that a short training still shows its usage.
FIRST_SAMPLE_SECONDS = 0.5


def _psutil() -> Any:
    try:
        import psutil
    except ImportError:
        return None
    return psutil


def _nvml() -> Any:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver or no GPU: CPU and memory only
        return False
    return pynvml


class ResourceMonitor:
    """Samples the process tree of ``pid`` into ``path`` until ``stop()``."""

    def __init__(self, pid: int, path: Path, every: float = SAMPLE_SECONDS) -> None:
        self.pid, self.path, self.every = pid, path, every
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="octotrain-resources", daemon=True)
        limit = os.environ.get("OCTOTRAIN_MEMORY_LIMIT_BYTES", "")
        self.memory_limit = int(limit) if limit.isdigit() else 0

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=self.every + 1)

    def _write(self, sample: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(sample) + "\n")

    def _run(self) -> None:
        psutil, nvml = _psutil(), _nvml()
        missing = [name for name, found in (("psutil", psutil), ("pynvml", nvml)) if found is None]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if missing:
            self._write({"timestamp": time.time(), "missing": missing})
        if psutil is None:
            return
        try:
            root = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        total = self.memory_limit or psutil.virtual_memory().total
        handles = _gpu_handles(nvml) if nvml else []
        root.cpu_percent(None)  # the baseline the first sample's CPU % is measured from
        wait = min(self.every, FIRST_SAMPLE_SECONDS)
        while not self.done.wait(wait):
            wait = self.every
            try:
                tree = [root, *root.children(recursive=True)]
                cpu = sum(process.cpu_percent(None) for process in tree)
                memory = sum(process.memory_info().rss for process in tree)
            except psutil.Error:
                return
            if memory == 0:  # exited, not yet reaped: a zombie holds no memory
                return
            sample: dict[str, Any] = {
                "timestamp": time.time(),
                "cpu_percent": round(cpu, 1),
                "memory_percent": round(100 * memory / total, 2),
                "memory_bytes": memory,
            }
            if handles:
                sample["gpus"] = [_gpu_sample(nvml, index, handle) for index, handle in handles]
            self._write(sample)


def _gpu_handles(nvml: Any) -> list[tuple[int, Any]]:
    """The GPUs visible to the process (the container runtime sets what NVML sees)."""
    return [
        (index, nvml.nvmlDeviceGetHandleByIndex(index))
        for index in range(nvml.nvmlDeviceGetCount())
    ]


def _gpu_sample(nvml: Any, index: int, handle: Any) -> dict[str, Any]:
    utilization = nvml.nvmlDeviceGetUtilizationRates(handle)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    return {
        "index": index,
        "utilization_percent": float(utilization.gpu),
        "memory_percent": round(100 * memory.used / memory.total, 2) if memory.total else 0.0,
    }
