"""Reading the METRICS folder a training process wrote (docs/concepts/environment-contract.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from octotrain.contracts import METRICS_META_FILE


def chart_names(folder: Path) -> list[str]:
    """The chart names declared in ``metrics.json``; empty if it is missing or unreadable."""
    try:
        document = json.loads((folder / METRICS_META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    metas = document.get("metas") if isinstance(document, dict) else None
    if not isinstance(metas, list):
        return []
    return [meta["name"] for meta in metas if isinstance(meta, dict) and "name" in meta]


def read_points(path: Path) -> tuple[list[dict[str, float]], int]:
    """Every well-formed point of a ``<name>.jsonl`` file, and how many lines were skipped.

    A torn last line (a writer caught mid-append) or a non-numeric value is skipped, never an
    error: the file is being appended to while it is read.
    """
    points: list[dict[str, float]] = []
    skipped = 0
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return points, 0
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            point = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if isinstance(point, dict) and all(_is_number(value) for value in point.values()):
            points.append(point)
        else:
            skipped += 1
    return points, skipped


def final_values(folder: Path) -> dict[str, dict[str, float]]:
    """The last point of every declared chart: the "final metrics" of a model version."""
    summary = {}
    for name in chart_names(folder):
        points, _ = read_points(folder / f"{name}.jsonl")
        if points:
            summary[name] = points[-1]
    return summary


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
