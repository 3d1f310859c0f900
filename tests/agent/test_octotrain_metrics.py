import json
from pathlib import Path

import pytest
from node_progress import read_progress

from agent.octotrain_metrics import MetricsWriter
from octotrain.metrics import chart_names, final_values, read_points
from octotrain.metrics_meta import parse_meta


def test_writer_follows_the_metrics_contract(tmp_path: Path) -> None:
    writer = MetricsWriter(tmp_path, task_id="7")
    writer.declare("loss", x="step", ys=["loss"], smooth=True)
    writer.declare("acc", x="epoch", ys=["acc"], series=["train", "val"], description="accuracy")
    writer.log("loss", step=1, loss=0.9)
    writer.log("loss", step=2, loss=0.5)
    writer.log("acc", epoch=1, train=0.7, val=0.6)
    meta = json.loads((tmp_path / "metrics.json").read_text())
    assert meta["id"] == "7"
    assert meta["metas"][0] == {
        "name": "loss",
        "x": "step",
        "ys": ["loss"],
        "description": "loss",
        "smooth": "true",
        "with_timestamp": "false",
    }
    assert meta["metas"][1]["series"] == ["train", "val"]
    assert chart_names(tmp_path) == ["loss", "acc"]
    assert final_values(tmp_path) == {
        "loss": {"step": 2, "loss": 0.5},
        "acc": {"epoch": 1, "train": 0.7, "val": 0.6},
    }


def test_writer_refuses_what_the_manual_forbids(tmp_path: Path) -> None:
    writer = MetricsWriter(tmp_path)
    with pytest.raises(ValueError, match=r"one \(left\) or two"):
        writer.declare("c", x="x", ys=["a", "b", "c"])
    with pytest.raises(ValueError, match="series"):
        writer.declare("c", x="x", ys=["a", "b"], series=["s"])
    with pytest.raises(ValueError, match="'train loss': names are 1 to 16"):
        writer.declare("c", x="x", ys=["train loss"])
    with pytest.raises(ValueError, match="description"):
        writer.declare("c", x="x", ys=["y"], description="d" * 65)
    with pytest.raises(ValueError, match="description 'loss and lr': 1 to 64 of CJK"):
        writer.declare("c", x="x", ys=["y"], description="loss and lr")
    for number in range(6):
        writer.declare(f"c{number}", x="x", ys=["y"])
    with pytest.raises(ValueError, match="at most 6"):
        writer.declare("c7", x="x", ys=["y"])
    with pytest.raises(KeyError):
        writer.log("undeclared", x=1)


def test_what_the_writer_declares_the_page_accepts(tmp_path: Path) -> None:
    writer = MetricsWriter(tmp_path, task_id="7")
    writer.declare("损失", x="step", ys=["loss", "lr"], description="loss-and-lr", smooth=True,
                   with_timestamp=True)  # fmt: skip
    writer.declare("per-class", x="epoch", ys=["f1"], series=["cat", "dog"], description="F1")
    meta = parse_meta((tmp_path / "metrics.json").read_bytes())
    assert meta.problems == [] and [chart.name for chart in meta.charts] == ["损失", "per-class"]


def test_torn_and_non_numeric_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "loss.jsonl"
    path.write_text('{"step": 1, "loss": 0.5}\n{"step": 2, "loss": "nan?"}\n{"step": 3, "lo')
    points, skipped = read_points(path)
    assert points == [{"step": 1, "loss": 0.5}]
    assert skipped == 2


def test_the_writer_declares_a_total_and_reports_progress(tmp_path: Path) -> None:
    writer = MetricsWriter(tmp_path)
    writer.declare("loss", x="step", ys=["loss"], total=100)
    assert parse_meta((tmp_path / "metrics.json").read_text()).charts[0].total == 100.0
    writer.log("loss", step=30, loss=0.5)
    assert read_progress(tmp_path) == (30.0, 100.0)
    writer.progress(3, 10)
    assert json.loads((tmp_path / "progress.json").read_text()) == {"current": 3, "total": 10}
    assert read_progress(tmp_path) == (3.0, 10.0)
    for bad in (0, -5, True):
        with pytest.raises(ValueError, match="the x at which the training ends"):
            writer.declare("loss", x="step", ys=["loss"], total=bad)
