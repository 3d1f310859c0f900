"""Charts' columns kept up to date with their data files, through the index stored beside them
(``octotrain/chart_series_index.py``).

``index_node_charts`` is for the stage that collects a node's metrics (the local launcher's
``collect_logs``, the Kubernetes ``collect_pod_logs``): it brings every valid chart's index up to
date, so that the first visit of the run's Metrics page reads columns instead of parsing a
million JSON lines per chart. The api-server (``hooks/runs/run_metrics.py``) uses the same index,
and writes it itself when it had to parse a lot without one (a live run, a run collected before
indexes existed), so either way the parse is paid once.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

from octotrain.chart_series_index import decoded, encoded
from octotrain.contracts import METRICS_META_FILE
from octotrain.metrics_meta import ChartMeta, parse_meta
from octotrain.metrics_series import ChartColumns
from octotrain.run_files import RunFiles
from octotrain.storage import ObjectNotFound, ObjectStore, ObjectStoreError

log = logging.getLogger(__name__)

READ_CHUNK = 8 << 20  # pieces of a stored index read


@dataclass(frozen=True)
class ChartFile:
    """A chart's ``<name>.jsonl`` among the run's files (the run folder, or the store)."""

    files: RunFiles
    key: str

    def size(self) -> int:
        return self.files.size(self.key) or 0

    def read(self, start: int, end: int) -> bytes:
        return self.files.read_range(self.key, start, end)


@dataclass
class IndexedChart:
    """A chart's columns so far, and how many bytes of its file its stored index covers."""

    columns: ChartColumns
    indexed: int = 0


def refreshed(
    file: ChartFile,
    chart: ChartMeta,
    *,
    store: ObjectStore,
    key: str,
    known: IndexedChart | None,
    reindex_bytes: int,
) -> IndexedChart:
    """``known`` (what this process read before), or else the index at ``key``, or else
    nothing, brought up to ``file``'s end: only what was appended is parsed. A file that no
    longer holds what they were read from (rewritten from the start) is read again, by its index
    if that one still matches. The index is written again when ``reindex_bytes`` or more were
    parsed past what it covers."""
    size = file.size()
    current = known
    if current is None or not _caught_up(current.columns, file, size):
        current = _stored(store, key, chart)
        if current is None or not _caught_up(current.columns, file, size):
            current = IndexedChart(ChartColumns(chart))
            _caught_up(current.columns, file, size)
    if current.columns.consumed - current.indexed >= reindex_bytes:
        _store(store, key, current)
    return current


def index_node_charts(store: ObjectStore, files: RunFiles, node_index: str) -> list[str]:
    """Bring the index (in ``store``) of each valid chart of a node up to date with its data
    file among the run's ``files``: the keys of the indexes now up to date. A node without a
    meta file has none; a failure to write one is logged, not raised (the charts are then
    parsed on their first request)."""
    objects = files.objects
    prefix = objects.metrics(node_index)
    meta = ChartFile(files, f"{prefix}/{METRICS_META_FILE}")
    size = meta.size()
    if size == 0:
        return []
    current = []
    for chart in parse_meta(meta.read(0, size)).charts:
        key = objects.chart_index(node_index, chart.name)
        file = ChartFile(files, f"{prefix}/{chart.name}.jsonl")
        indexed = refreshed(file, chart, store=store, key=key, known=None, reindex_bytes=1)
        if indexed.indexed and indexed.indexed == indexed.columns.consumed:
            current.append(key)
    return current


def _caught_up(columns: ChartColumns, file: ChartFile, size: int) -> bool:
    """Feed ``columns`` what ``file`` holds past them; False (and nothing fed) when the file no
    longer holds, where they stopped, the bytes they were read from."""
    if size < columns.consumed:
        return False
    if size > columns.consumed:
        data = file.read(columns.consumed - len(columns.tail), size)
        if not data.startswith(columns.tail):
            return False
        columns.feed(data[len(columns.tail) :])
    return True


def _stored(store: ObjectStore, key: str, chart: ChartMeta) -> IndexedChart | None:
    try:
        data = b"".join(store.iter_bytes(key, chunk_size=READ_CHUNK))
    except ObjectNotFound:
        return None
    except ObjectStoreError as error:  # a cache: the file is still there to parse
        log.warning("cannot read the chart index %s: %s", key, error)
        return None
    columns = decoded(data, chart)
    return None if columns is None else IndexedChart(columns, columns.consumed)


def _store(store: ObjectStore, key: str, chart: IndexedChart) -> None:
    try:
        with tempfile.NamedTemporaryFile(prefix="chart-index-") as scratch:
            for piece in encoded(chart.columns):
                scratch.write(piece)
            scratch.flush()
            store.put_file(key, Path(scratch.name))
    except (ObjectStoreError, OSError) as error:
        log.warning("cannot write the chart index %s: %s", key, error)
        return
    chart.indexed = chart.columns.consumed
