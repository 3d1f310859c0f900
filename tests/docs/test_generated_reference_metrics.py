"""docs/reference/metrics-format.md: its tables cover every key of ``metrics.json`` and every
field of a metric definition, say of each key what the reader does (required or not, the value
taken when left out), and its examples are what the code reads and writes."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from reference_parts.metrics import file_key_default, file_keys

from octotrain.catalog.documents import AlgorithmDocument
from octotrain.documents import parse_document
from octotrain.metric_definitions import MetricDefinition
from octotrain.metrics import read_points
from octotrain.metrics_meta import ChartMeta, MetricsMeta, parse_meta
from octotrain.settings import REPO_ROOT

Page = Callable[[str], str]
# A fenced block and the paragraph right before it, which names the file it holds: the last
# file name (``name.ext``) in backticks there.
EXAMPLE = re.compile(r"((?:[^\n]+\n)+)\n```[a-z]+\n(.*?)\n```", re.DOTALL)
FILE_NAME = re.compile(r"`([^`\s]+\.[a-z]+)`")


def _section(page: str, title: str) -> str:
    """The part of ``page`` under its ``## title``, up to the next such heading."""
    start = page.index(f"\n## {title}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else len(page)]


def _examples(section: str) -> dict[str, str]:
    """Each example file of a section of the page by its name → its text."""
    return {FILE_NAME.findall(before)[-1]: text for before, text in EXAMPLE.findall(section)}


def _rows(text: str) -> dict[str, str]:
    """Each table row's backticked first cell → the row."""
    return {match[1]: match[0] for match in re.finditer(r"^\| `([^`]+)` \|.*$", text, re.MULTILINE)}


@pytest.fixture(scope="module")
def page(reference_page: Page) -> str:
    return reference_page("metrics-format.md")


def test_every_key_of_the_file_and_of_a_chart_is_described(page: str) -> None:
    rows = _rows(_section(page, "metrics.json"))
    chart_fields = dataclasses.fields(ChartMeta)
    assert [field.name for field in chart_fields if "description" not in field.metadata] == []
    keys = [key for key, _ in file_keys(MetricsMeta)]
    assert keys == ["id", "metas"]
    for key, field in [*file_keys(MetricsMeta), *file_keys(ChartMeta)]:
        assert key in rows, f"{key} is not in the reference"
        assert " ".join(field.metadata["description"].split()) in rows[key]


def _example_file(page: str) -> dict[str, Any]:
    return json.loads(_examples(_section(page, "metrics.json"))["metrics.json"])


def test_the_example_file_breaks_no_rule_and_shows_every_key(page: str) -> None:
    document = _example_file(page)
    meta = parse_meta(json.dumps(document))
    assert meta.problems == []
    assert [chart.name for chart in meta.charts] == [item["name"] for item in document["metas"]]
    assert set(document["metas"][0]) == {field.name for field in dataclasses.fields(ChartMeta)}


def _without(document: dict[str, Any], key: str, *, in_chart: bool) -> MetricsMeta:
    """The example file read with ``key`` left out of it (of its first chart: ``in_chart``)."""
    changed = copy.deepcopy(document)
    del (changed["metas"][0] if in_chart else changed)[key]
    return parse_meta(json.dumps(changed))


@pytest.mark.parametrize("model", [MetricsMeta, ChartMeta])
def test_what_the_reference_says_of_a_left_out_key_is_what_the_reader_does(
    page: str, model: type
) -> None:
    """Required: leaving it out is a problem at its place; optional: it is then taken to be
    the default the reference shows."""
    document = _example_file(page)
    in_chart = model is ChartMeta
    for key, field in file_keys(model):
        optional, default = file_key_default(field)
        read = _without(document, key, in_chart=in_chart)
        problems = [problem.field for problem in read.problems]
        if not optional:
            assert f"{'metas[0].' if in_chart else ''}{key}" in problems, f"{key} is required"
            continue
        assert problems == [], f"{key} is optional, yet left out it is a problem: {problems}"
        value = getattr(read.charts[0] if in_chart else read, field.name)
        assert value == default, f"{key} left out reads as {value!r}, not {default!r}"


def test_the_example_points_are_read_whole_with_the_keys_of_their_chart(
    page: str, tmp_path: Path
) -> None:
    examples = _examples(_section(page, "metrics.json"))
    charts = parse_meta(examples["metrics.json"]).charts
    assert charts
    for chart in charts:
        file = tmp_path / f"{chart.name}.jsonl"
        file.write_text(examples[file.name] + "\n", encoding="utf-8")
        points, skipped = read_points(file)
        assert points and skipped == 0
        keys = {chart.x, *chart.lines} | ({"timestamp"} if chart.with_timestamp else set())
        assert all(set(point) == keys for point in points), chart.name


def test_every_field_of_a_metric_definition_is_described(page: str) -> None:
    rows = _rows(_section(page, "Metric definitions"))
    for name, field in MetricDefinition.model_fields.items():
        assert field.description, f"MetricDefinition.{name} has no description"
        assert name in rows, f"{name} is not in the reference"
        assert " ".join(field.description.split()) in rows[name]


def test_the_example_algorithm_s_definitions_make_the_points_shown(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example algorithm is valid, and the node's wrapper, given its definitions and the
    example log, writes a valid ``metrics.json`` and exactly the points the page shows."""
    monkeypatch.syspath_prepend(str(REPO_ROOT / "agent"))  # as the launcher puts it on the path
    sys.modules.pop("log_metrics", None)
    from log_metrics import LogMetricsExtractor

    examples = _examples(_section(page, "Metric definitions"))
    algorithm = parse_document(AlgorithmDocument, yaml.safe_load(examples["algorithm.yaml"]))
    defaults = {parameter.name: parameter.default for parameter in algorithm.parameters}
    extractor = LogMetricsExtractor(
        tmp_path, [chart.extraction(defaults) for chart in algorithm.metric_definitions], "7"
    )
    extractor.feed((examples["train.log"] + "\n").encode())
    extractor.finish()
    assert parse_meta((tmp_path / "metrics.json").read_bytes()).problems == []
    for chart in algorithm.metric_definitions:
        written = (tmp_path / f"{chart.name}.jsonl").read_text(encoding="utf-8").splitlines()
        shown = examples[f"{chart.name}.jsonl"].splitlines()
        assert [json.loads(line) for line in written] == [json.loads(line) for line in shown]
