"""Write training metrics the way Octotrain's charts read them (docs: the environment contract).

Dependency-free, for algorithm authors::

    from octotrain_metrics import MetricsWriter

    metrics = MetricsWriter()  # the folder named by $METRICS
    metrics.declare("loss", x="step", ys=["loss"], description="training-loss", smooth=True)
    metrics.log("loss", step=10, loss=0.42)

``metrics.json`` is rewritten atomically on every ``declare``; each point is one JSON line
appended and flushed at once, so a reader never sees a half-declared chart and at worst a torn
last line, which readers ignore.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

MAX_CHARTS = 6
MAX_SERIES = 4
MAX_DESCRIPTION = 64
# The manual's rules for chart, axis and series names and for descriptions
# (octotrain/metrics_meta.py judges the same)
LABEL_CHARACTERS = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaffA-Za-z0-9_-]"
NAME = re.compile(LABEL_CHARACTERS + "{1,16}")
DESCRIPTION = re.compile(LABEL_CHARACTERS + f"{{1,{MAX_DESCRIPTION}}}")


class MetricsWriter:
    def __init__(self, folder: str | os.PathLike[str] | None = None, task_id: str = "") -> None:
        target = folder if folder is not None else os.environ.get("METRICS")
        if not target:
            raise RuntimeError("no metrics folder: set $METRICS or pass folder=")
        self.folder = Path(target)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.task_id = task_id or os.environ.get("TASK_ID", "")
        self._metas: dict[str, dict[str, object]] = {}

    def declare(
        self,
        name: str,
        *,
        x: str,
        ys: list[str],
        series: list[str] | None = None,
        description: str = "",
        smooth: bool = False,
        with_timestamp: bool = False,
        total: float | None = None,
    ) -> None:
        """Declare (or redeclare) chart ``name``; at most 6 charts, 1-2 y axes, 0-4 series.
        ``total``: the x at which the training ends, so that its progress and ETA show (unless
        it writes ``progress.json``, ``MetricsWriter.progress``)."""
        if name not in self._metas and len(self._metas) >= MAX_CHARTS:
            raise ValueError(f"at most {MAX_CHARTS} charts may be declared")
        if not 1 <= len(ys) <= 2:
            raise ValueError("ys must name one (left) or two (left, right) axes")
        if series and (len(series) > MAX_SERIES or len(ys) != 1):
            raise ValueError(f"series: at most {MAX_SERIES}, and then ys has exactly one axis")
        for label in [name, x, *ys, *(series or [])]:
            if not NAME.fullmatch(label):
                raise ValueError(f"{label!r}: names are 1 to 16 of CJK, letters, digits, - and _")
        if not DESCRIPTION.fullmatch(description or name):
            raise ValueError(
                f"description {description!r}: 1 to {MAX_DESCRIPTION} of CJK, letters, digits, "
                "- and _"
            )
        meta: dict[str, object] = {
            "name": name,
            "x": x,
            "ys": list(ys),
            "description": description or name,
            "smooth": "true" if smooth else "false",
            "with_timestamp": "true" if with_timestamp else "false",
        }
        if series:
            meta["series"] = list(series)
        if total is not None:
            if isinstance(total, bool) or not 0 < total < float("inf"):
                raise ValueError(f"total {total!r}: the x at which the training ends, above 0")
            meta["total"] = total
        self._metas[name] = meta
        document = {"id": self.task_id, "metas": list(self._metas.values())}
        partial = self.folder / ".metrics.json.partial"
        partial.write_text(json.dumps(document, ensure_ascii=False, indent=2), encoding="utf-8")
        partial.replace(self.folder / "metrics.json")

    def progress(self, current: float, total: float | None = None) -> None:
        """Say how far the training is (``$METRICS/progress.json``, rewritten whole): the
        run's pages and API show the percent and an estimate of when it ends."""
        document = {"current": current} | ({} if total is None else {"total": total})
        partial = self.folder / ".progress.json.partial"
        partial.write_text(json.dumps(document), encoding="utf-8")
        partial.replace(self.folder / "progress.json")

    def log(self, name: str, **values: float) -> None:
        """Append one point of chart ``name``, keyed by the names declared for it."""
        meta = self._metas.get(name)
        if meta is None:
            raise KeyError(f"chart {name!r} was not declared")
        point: dict[str, float] = dict(values)
        if meta["with_timestamp"] == "true":
            point.setdefault("timestamp", time.time())
        line = json.dumps(point, ensure_ascii=False) + "\n"
        with (self.folder / f"{name}.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
