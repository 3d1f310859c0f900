"""The door to a run's metrics and resource samples, among the run's files where its launcher
keeps them (``RunFiles``: the run folder while a local run is live, else the object store, where
a pod's sidecar syncs them live and ``collect_logs`` puts them after the run).

Chart data is read once per api-server process and then only what was appended since
(``ChartColumns`` remembers where it stopped): a live chart that refreshes every few seconds
costs the new points, not the whole file. The first read takes the chart's index where there is
one (``hooks/runs/chart_series_index.py``, written when the metrics were collected) and parses only
the file's bytes past it; each chart has a lock of its own, so the six charts of a page are read
side by side.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from hooks.runs.chart_series_index import ChartFile, IndexedChart, refreshed
from octotrain.contracts import METRICS_META_FILE
from octotrain.errors import NotFound
from octotrain.metrics_meta import ChartMeta, MetricsMeta, parse_meta
from octotrain.metrics_series import ChartColumns
from octotrain.run_comparison import FinalValue, final_values
from octotrain.run_files import RunFiles
from octotrain.storage import ObjectStore

CACHED_CHARTS = 32
# A chart's index is written again once this much of its file was parsed past what the index
# covers (a live run, a run collected before indexes existed): about 0.4 s of parsing that the
# next process to read the chart is spared.
REINDEX_BYTES = 16 << 20


@dataclass
class _Read:
    """What this process read of one chart; ``lock`` is held while it is brought up to date."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    chart: IndexedChart | None = None


# (where the file is, its x, its drawn lines) → what was read of it
_cache: OrderedDict[tuple[str, str, tuple[str, ...]], _Read] = OrderedDict()
_cache_lock = threading.Lock()  # held only to find or add an entry, never while reading


@dataclass
class ResourceSamples:
    """One node's samples as columns: ``cpu_percent``, ``memory_percent``, ``memory_bytes``,
    and per GPU ``gpu<N>_utilization_percent`` and ``gpu<N>_memory_percent``."""

    timestamps: list[float] = field(default_factory=list)
    columns: dict[str, list[float]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # packages absent from the image
    skipped: int = 0


class RunMetrics:
    def __init__(self, files: RunFiles, store: ObjectStore, nodes: list[str]) -> None:
        """``store`` keeps the charts' indexes (``hooks.runs.chart_series_index``)."""
        self.files, self.store, self.nodes = files, store, nodes

    def check_node(self, node: str) -> None:
        if node not in self.nodes:
            raise NotFound(f"the run has no node {node!r}; it has {', '.join(self.nodes)}")

    def meta(self, node: str) -> MetricsMeta | None:
        """The node's judged meta file; None while it has written none."""
        self.check_node(node)
        data = self.files.read(f"{self.files.objects.metrics(node)}/{METRICS_META_FILE}")
        return None if data is None else parse_meta(data)

    def chart(self, node: str, name: str) -> ChartColumns:
        """The points of chart ``name``, declared valid in the node's meta file."""
        meta = self.meta(node)
        chart = meta.chart(name) if meta else None
        if chart is None:
            raise NotFound(f"node {node} has no valid chart {name!r}")
        return self.columns(node, chart)

    def columns(self, node: str, chart: ChartMeta) -> ChartColumns:
        """Every point of ``chart`` so far, reading only what was appended since last time: a
        snapshot that later reads do not change."""
        key = f"{self.files.objects.metrics(node)}/{chart.name}.jsonl"
        holder = self.files.holder(key)
        file = ChartFile(holder, key)
        index = self.files.objects.chart_index(node, chart.name)
        read = _read_of((holder.address(key), chart.x, tuple(chart.lines)))
        with read.lock:
            read.chart = refreshed(
                file,
                chart,
                store=self.store,
                key=index,
                known=read.chart,
                reindex_bytes=REINDEX_BYTES,
            )
            # as declared now (a description may have changed)
            return replace(read.chart.columns, chart=chart)

    def resources(self, node: str) -> ResourceSamples:
        self.check_node(node)
        data = self.files.read(self.files.objects.resources(node)) or b""
        samples = ResourceSamples()
        for row in data.split(b"\n"):
            if row.strip():
                _add_sample(samples, row)
        return samples


def first_node(reader: RunMetrics) -> str:
    """The node whose charts stand for the run (compare, a model version's final metrics)."""
    return reader.nodes[0] if reader.nodes else "single-0"


def node_charts(reader: RunMetrics, node: str) -> list[ChartMeta]:
    """The node's valid charts; none while it has written no meta file (or before its plan)."""
    if node not in reader.nodes:
        return []
    meta = reader.meta(node)
    return meta.charts if meta else []


def chart_finals(reader: RunMetrics, node: str, chart: ChartMeta) -> dict[str, FinalValue]:
    """Each line's last value in the node's chart, and the x it was written at."""
    columns = reader.columns(node, chart)
    return final_values(columns.x, dict(columns.lines))


def forget_charts() -> None:
    """Drop what this process has read of every chart, as a freshly started api-server has
    read nothing (``bench.charts`` measures first visits this way)."""
    with _cache_lock:
        _cache.clear()


def _read_of(cache_key: tuple[str, str, tuple[str, ...]]) -> _Read:
    with _cache_lock:
        read = _cache.pop(cache_key, None) or _Read()
        _cache[cache_key] = read
        while len(_cache) > CACHED_CHARTS:
            _cache.popitem(last=False)
        return read


def _add_sample(samples: ResourceSamples, row: bytes) -> None:
    try:
        sample = json.loads(row)
    except ValueError:
        samples.skipped += 1  # a torn last line
        return
    if not isinstance(sample, dict):
        samples.skipped += 1
        return
    if isinstance(sample.get("missing"), list):
        samples.missing = [str(name) for name in sample["missing"]]
        return
    values = {name: sample.get(name) for name in ("cpu_percent", "memory_percent", "memory_bytes")}
    for gpu in sample.get("gpus") or []:
        if isinstance(gpu, dict):
            for metric in ("utilization_percent", "memory_percent"):
                values[f"gpu{gpu.get('index')}_{metric}"] = gpu.get(metric)
    samples.timestamps.append(_number(sample.get("timestamp")))
    count = len(samples.timestamps)
    for name, value in values.items():
        column = samples.columns.setdefault(name, [math.nan] * (count - 1))
        column.append(_number(value))
    for column in samples.columns.values():  # a GPU that was not sampled this time: a gap
        if len(column) < count:
            column.append(math.nan)


def _number(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return math.nan
