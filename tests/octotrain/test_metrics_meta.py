"""Every rule of the meta file, at its edges; valid charts survive a bad neighbour."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from octotrain.metrics_meta import meta_report, parse_meta


def meta(**changes: Any) -> dict[str, Any]:
    chart = {"name": "loss", "x": "step", "ys": ["loss"], "description": "training-loss",
             "smooth": "true", "with_timestamp": "false"}  # fmt: skip
    chart.update(changes)
    return {key: value for key, value in chart.items() if value is not None}


def problems_of(*charts: Any) -> list[str]:
    return [
        str(problem)
        for problem in parse_meta(json.dumps({"id": "7", "metas": list(charts)})).problems
    ]


def test_a_valid_file_gives_its_charts() -> None:
    parsed = parse_meta(json.dumps({"id": "7", "metas": [
        meta(), meta(name="精度-acc_1", ys=["acc", "lr"], smooth=False, with_timestamp=True),
        meta(name="per-class", ys=["f1"], series=["a", "b", "c", "d"]),
    ]}))  # fmt: skip
    assert parsed.problems == [] and parsed.id == "7"
    loss, acc, classes = parsed.charts
    assert (loss.smooth, loss.with_timestamp, loss.lines) == (True, False, ["loss"])
    assert (acc.smooth, acc.with_timestamp, acc.lines) == (False, True, ["acc", "lr"])
    assert classes.lines == ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"name": "x" * 17}, f'metas[0].name: "{"x" * 17}" must be 1 to 16'),
        ({"name": ""}, 'metas[0].name: "" must be 1 to 16'),
        ({"name": "has space"}, 'metas[0].name: "has space" must be 1 to 16'),
        ({"name": "<script>"}, 'metas[0].name: "<script>" must be 1 to 16'),
        ({"name": "y" * 50}, f'metas[0].name: "{"y" * 39}… must be 1 to 16'),
        ({"x": None}, "metas[0].x: (missing) must be 1 to 16"),
        ({"ys": []}, "metas[0].ys: must list 1 to 2 names"),
        ({"ys": ["a", "b", "c"]}, "metas[0].ys: must list 1 to 2 names"),
        ({"ys": ["a", "a"]}, "metas[0].ys: names must differ"),
        ({"ys": ["a", "b"], "series": ["s"]}, "metas[0].ys: must name exactly one axis"),
        ({"series": ["a", "b", "c", "d", "e"]}, "metas[0].series: must list 0 to 4 names"),
        ({"series": ["ok", "not ok"]}, 'metas[0].series[1]: "not ok" must be 1 to 16'),
        ({"description": ""}, 'metas[0].description: "" must be 1 to 64'),
        ({"description": "d" * 65}, 'metas[0].description: "ddd'),
        ({"description": "training loss"}, 'metas[0].description: "training loss" must be 1 to 64'),
        ({"description": "a/b"}, 'metas[0].description: "a/b" must be 1 to 64 of CJK'),
        ({"description": 7}, "metas[0].description: 7 must be 1 to 64 of CJK"),
        ({"smooth": "yes"}, 'metas[0].smooth: must be "true" or "false"'),
        ({"with_timestamp": 1}, 'metas[0].with_timestamp: must be "true" or "false"'),
        ({"x": "loss"}, "metas[0].x: 'loss' is also a line"),
    ],
)
def test_each_rule_names_its_field(changes: dict[str, Any], expected: str) -> None:
    found = problems_of(meta(**changes), meta(name="fine"))
    assert any(problem.startswith(expected) for problem in found), found
    assert [
        chart.name
        for chart in parse_meta(json.dumps({"metas": [meta(**changes), meta(name="fine")]})).charts
    ] == ["fine"]


def test_edges_that_hold() -> None:
    assert problems_of(meta(name="x" * 16, description="d" * 64, smooth=True)) == []
    assert problems_of(meta(name="一二三四五六七八九十一二三四五六")) == []
    assert problems_of(meta(description="训练损失-loss_2")) == []


def test_whole_file_problems() -> None:
    seven = [meta(name=f"c{n}") for n in range(7)]
    parsed = parse_meta(json.dumps({"metas": seven}))
    assert len(parsed.charts) == 6
    assert [str(p) for p in parsed.problems] == ['metas: at most 6 charts; not shown: "c6"']
    twice = parse_meta(json.dumps({"metas": [meta(), meta(description="again")]}))
    assert [c.description for c in twice.charts] == ["training-loss"]
    assert str(twice.problems[0]) == "metas[1].name: 'loss' is declared twice"
    assert str(parse_meta("{not json").problems[0]).startswith("metrics.json: is not valid JSON")
    assert str(parse_meta("[]").problems[0]) == "metrics.json: must be a JSON object"
    assert str(parse_meta('{"metas": 3}').problems[0]) == "metas: must be a list of charts"
    assert str(parse_meta('{"metas": [3]}').problems[0]) == "metas[0]: must be an object"


def test_the_sidecar_report(tmp_path: Path) -> None:
    assert meta_report(tmp_path) == []  # no meta file yet
    (tmp_path / "metrics.json").write_text(json.dumps({"metas": [meta(), meta(name="bad one")]}))
    assert meta_report(tmp_path) == [
        "metrics.json breaks 1 rule(s); charts shown: loss",
        '  metas[1].name: "bad one" must be 1 to 16 of CJK characters, letters, digits, - and _',
    ]
    (tmp_path / "metrics.json").write_text(json.dumps({"metas": [meta()]}))
    assert meta_report(tmp_path) == []


def test_a_chart_may_declare_the_total_its_x_reaches() -> None:
    """The training's progress when it writes no progress.json (octotrain/node_progress.py)."""
    parsed = parse_meta(json.dumps({"id": "7", "metas": [meta(total=1000), meta(name="b")]}))
    assert [chart.total for chart in parsed.charts] == [1000.0, None]
    for bad in (0, -1, "1000", True, [1]):
        assert problems_of(meta(total=bad)) == [
            f"metas[0].total: {json.dumps(bad)} must be a number above 0"
        ]
