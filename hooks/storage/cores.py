"""How many cores this process may use: the bound for threads whose work is CPU, not waiting
(local copies, hashing, file-system metadata)."""

from __future__ import annotations

import os


def cores_available() -> int:
    """The cores this process may run on: its affinity where the system has one (Linux; a
    container's cpuset limits it), else the machine's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
