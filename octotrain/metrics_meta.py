"""Judging a training's ``metrics.json`` by every rule of the manual (SPEC.md "Training metrics
visualisation", docs/concepts/environment-contract.md: METRICS).

The charts page must never go blank over a bad meta file: each chart is judged on its own,
the valid ones are kept, and every problem is named by its place in the file
(``metas[2].ys``) and its rule, for the page and the sidecar log to show.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from octotrain.contracts import METRICS_META_FILE
from octotrain.errors import FieldProblem

MAX_CHARTS = 6
MAX_SERIES = 4
MAX_DESCRIPTION = 64
# CJK ideographs (with extension A and the compatibility block), letters, digits, - and _
LABEL_CHARACTERS = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaffA-Za-z0-9_-]"
NAME = re.compile(LABEL_CHARACTERS + "{1,16}")
NAME_RULE = "must be 1 to 16 of CJK characters, letters, digits, - and _"
DESCRIPTION = re.compile(LABEL_CHARACTERS + f"{{1,{MAX_DESCRIPTION}}}")
DESCRIPTION_RULE = f"must be 1 to {MAX_DESCRIPTION} of CJK characters, letters, digits, - and _"
SHOWN_CHARS = 40
FLAGS = {"true": True, "false": False, True: True, False: False}


@dataclass(frozen=True)
class ChartMeta:
    """One chart of ``metrics.json`` (an item of its ``metas``) that breaks no rule.

    Each field is the chart's key of the same name; its metadata's ``description`` says what
    the file holds there, and ``default`` what a key the file may leave out is then taken to be
    where the field itself has no default. The reference of the file's format is generated from
    them (docs/reference/metrics-format.md), so a key added here is documented there.
    """

    name: str = field(
        metadata={
            "description": "the chart's name, unique in the file, and its points' file "
            f"`<name>.jsonl`; {NAME_RULE}"
        }
    )
    x: str = field(
        metadata={
            "description": f"the key of a point that holds its x; {NAME_RULE}; not also "
            "one of the chart's lines"
        }
    )
    ys: list[str] = field(
        metadata={
            "description": "the y axes, 1 or 2 names (left, right), different, each "
            f"{NAME_RULE}; without `series`, the keys of a point drawn against them"
        }
    )
    series: list[str] = field(
        metadata={
            "description": "the lines drawn against the one y axis (`ys` then names "
            f"exactly one), each a key of a point: 0 to {MAX_SERIES} names, different, "
            f"each {NAME_RULE}",
            "default": [],
        }
    )
    description: str = field(metadata={"description": f"shown with the chart; {DESCRIPTION_RULE}"})
    smooth: bool = field(
        default=False,
        metadata={
            "description": "draw the lines smoothed (a moving average, the raw line "
            "faint behind it)"
        },
    )
    with_timestamp: bool = field(
        default=False,
        metadata={
            "description": "each point also holds `timestamp`, seconds since the epoch "
            "(the chart's CSV gets a column of it)"
        },
    )
    total: float | None = field(
        default=None,
        metadata={
            "description": "the x at which the training ends, a number above 0: the "
            "chart then gives the node's progress and its estimated end, unless "
            "`progress.json` (in the same folder) does"
        },
    )

    @property
    def lines(self) -> list[str]:
        """The keys of a point that are drawn: the series when there are, else the y axes."""
        return self.series or self.ys


@dataclass(frozen=True)
class MetricsMeta:
    """The charts that may be drawn, in the file's order, and what is wrong with the rest.

    A field read from the file has a ``description`` in its metadata (and ``key``, the file's
    name for it, when that differs; ``required`` when the file must have it though the field
    has a default), as ``ChartMeta``'s fields do.
    """

    id: str = field(
        default="",
        metadata={
            "description": "the training task's id (`MetricsWriter` writes `$TASK_ID`); "
            "kept as a string, not judged"
        },
    )
    charts: list[ChartMeta] = field(
        default_factory=list,
        metadata={
            "key": "metas",
            "required": True,
            "description": f"the charts, in the order they are shown: at most {MAX_CHARTS} "
            "(the rest are left out), names unique; each is judged on its own: the valid ones "
            "are drawn, one that breaks a rule is not, its problems named by their place "
            "(`metas[2].ys`)",
        },
    )
    # Not in the file: what is wrong with it.
    problems: list[FieldProblem] = field(default_factory=list)

    def chart(self, name: str) -> ChartMeta | None:
        return next((chart for chart in self.charts if chart.name == name), None)


def meta_report(folder: Path) -> list[str]:
    """What a node's sidecar log says of its ``metrics.json``: each problem on a line; nothing
    when the file is valid or absent."""
    try:
        text = (folder / METRICS_META_FILE).read_bytes()
    except OSError:
        return []
    meta = parse_meta(text)
    if not meta.problems:
        return []
    shown = ", ".join(chart.name for chart in meta.charts) or "none"
    return [
        f"metrics.json breaks {len(meta.problems)} rule(s); charts shown: {shown}",
        *(f"  {problem}" for problem in meta.problems),
    ]


def parse_meta(text: str | bytes) -> MetricsMeta:
    try:
        document = json.loads(text)
    except ValueError as error:
        return MetricsMeta(problems=[FieldProblem("metrics.json", f"is not valid JSON: {error}")])
    if not isinstance(document, dict):
        return MetricsMeta(problems=[FieldProblem("metrics.json", "must be a JSON object")])
    problems: list[FieldProblem] = []
    metas = document.get("metas")
    if not isinstance(metas, list):
        return MetricsMeta(problems=[FieldProblem("metas", "must be a list of charts")])
    if len(metas) > MAX_CHARTS:
        left_out = [
            _shown(meta.get("name") if isinstance(meta, dict) else meta)
            for meta in metas[MAX_CHARTS:]
        ]
        problems.append(
            FieldProblem("metas", f"at most {MAX_CHARTS} charts; not shown: {', '.join(left_out)}")
        )
    charts: list[ChartMeta] = []
    for index, meta in enumerate(metas[:MAX_CHARTS]):
        chart, found = _chart(meta, f"metas[{index}]")
        if chart is not None and any(other.name == chart.name for other in charts):
            found.append(FieldProblem(f"metas[{index}].name", f"'{chart.name}' is declared twice"))
            chart = None
        problems.extend(found)
        if chart is not None:
            charts.append(chart)
    chart_id = document.get("id", "")
    return MetricsMeta(id=str(chart_id), charts=charts, problems=problems)


def _chart(meta: Any, where: str) -> tuple[ChartMeta | None, list[FieldProblem]]:
    if not isinstance(meta, dict):
        return None, [FieldProblem(where, "must be an object")]
    problems: list[FieldProblem] = []

    def name(key: str, value: Any) -> str:
        if not isinstance(value, str) or NAME.fullmatch(value) is None:
            problems.append(FieldProblem(f"{where}.{key}", f"{_shown(value)} {NAME_RULE}"))
            return ""
        return value

    def names(key: str, value: Any, low: int, high: int) -> list[str]:
        if not isinstance(value, list) or not low <= len(value) <= high:
            problems.append(FieldProblem(f"{where}.{key}", f"must list {low} to {high} names"))
            return []
        listed = [name(f"{key}[{number}]", item) for number, item in enumerate(value)]
        if len(set(listed)) != len(listed):
            problems.append(FieldProblem(f"{where}.{key}", "names must differ"))
        return listed

    chart_name = name("name", meta.get("name"))
    x = name("x", meta.get("x"))
    ys = names("ys", meta.get("ys"), 1, 2)
    series = names("series", meta.get("series", []), 0, MAX_SERIES)
    if series and len(ys) != 1:
        problems.append(
            FieldProblem(f"{where}.ys", "must name exactly one axis when there are series")
        )
    description = meta.get("description")
    if not isinstance(description, str) or DESCRIPTION.fullmatch(description) is None:
        problems.append(
            FieldProblem(f"{where}.description", f"{_shown(description)} {DESCRIPTION_RULE}")
        )
    smooth = _flag(meta, "smooth", where, problems)
    with_timestamp = _flag(meta, "with_timestamp", where, problems)
    if x and x in (series or ys):
        problems.append(FieldProblem(f"{where}.x", f"'{x}' is also a line of the chart"))
    total = meta.get("total")
    if total is not None and chart_total(total) is None:
        problems.append(FieldProblem(f"{where}.total", f"{_shown(total)} must be a number above 0"))
    if problems:
        return None, problems
    chart = ChartMeta(chart_name, x, ys, series, str(description), smooth, with_timestamp,
                      chart_total(total))  # fmt: skip
    return chart, []


def chart_total(value: object) -> float | None:
    """``value`` as a chart's total (the x at which the training ends): a finite number above
    0, not a bool; None for anything else. The one rule of a total, declared in a chart's meta
    or in an algorithm's metric definition."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        return None
    return float(value)


def _flag(meta: dict[str, Any], key: str, where: str, problems: list[FieldProblem]) -> bool:
    value = meta.get(key, False)
    if isinstance(value, bool | str) and value in FLAGS:
        return FLAGS[value]
    problems.append(FieldProblem(f"{where}.{key}", 'must be "true" or "false" (or a boolean)'))
    return False


def _shown(value: Any) -> str:
    """A refused value as the problem quotes it (cut short: the file may hold anything)."""
    if value is None:
        return "(missing)"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}…"
