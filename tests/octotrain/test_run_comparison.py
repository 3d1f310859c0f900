"""Comparing runs: the ``runs`` query's rules, alignment by x (union, gaps, a repeated x keeps
its last value), final values, the parameter diff and the trend."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from octotrain.errors import InvalidQuery
from octotrain.run_comparison import (
    MAX_COMPARED_RUNS,
    FinalValue,
    RunFinals,
    RunPoints,
    align_by_x,
    final_values,
    parameter_table,
    parse_run_ids,
    trend,
)

NAN = float("nan")


def test_run_ids_are_read_in_order() -> None:
    assert parse_run_ids(" 15, 3 ,8") == [15, 3, 8]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("3", "compare 2 to 8 runs, separated by commas; 1 given"),
        ("", "compare 2 to 8 runs, separated by commas; 0 given"),
        (",".join(str(n) for n in range(1, MAX_COMPARED_RUNS + 2)), "9 given"),
        ("3,x", "'x' is not a run id (a whole number from 1)"),
        ("3,0", "'0' is not a run id"),
        ("3,-4", "'-4' is not a run id"),
        ("3,٣", "'٣' is not a run id"),
        ("3,4,3", "run 3 is given twice"),
    ],
)
def test_bad_run_ids_are_refused_naming_the_field(text: str, rule: str) -> None:
    with pytest.raises(InvalidQuery) as refused:
        parse_run_ids(text)
    [problem] = refused.value.problems
    assert problem.field == "runs" and rule in problem.rule


def points(label: str, x: list[float], **lines: list[float]) -> RunPoints:
    columns = {name: np.array(values, dtype=float) for name, values in lines.items()}
    return RunPoints(label, np.array(x, dtype=float), columns)


def test_runs_are_aligned_on_the_union_of_their_x() -> None:
    aligned = align_by_x([
        points("run 1", [0, 10, 20], loss=[3.0, 2.0, 1.0]),
        points("run 2", [5, 10, 30, 40], loss=[2.5, NAN, 0.5, 0.25]),
    ])  # fmt: skip
    assert aligned.x == [0, 5, 10, 20, 30, 40]
    assert aligned.values["run 1"]["loss"] == [3.0, None, 2.0, 1.0, None, None]
    # a gap the run itself wrote stays a gap
    assert aligned.values["run 2"]["loss"] == [None, 2.5, None, None, 0.5, 0.25]


def test_a_repeated_x_keeps_its_last_value_and_x_out_of_order_is_sorted() -> None:
    resumed = points("run 1", [0, 1, 2, 1, 2, 3], loss=[9, 8, 7, 6, 5, 4], acc=[0, 1, 2, 3, 4, 5])
    aligned = align_by_x([resumed, points("run 2", [2], loss=[1.0], acc=[1.0])])
    assert aligned.x == [0, 1, 2, 3]
    assert aligned.values["run 1"] == {"loss": [9, 6, 5, 4], "acc": [0, 3, 4, 5]}
    assert aligned.values["run 2"] == {"loss": [None, None, 1.0, None],
                                       "acc": [None, None, 1.0, None]}  # fmt: skip


def test_runs_without_points_align_to_nothing() -> None:
    assert align_by_x([]).x == []
    empty = align_by_x([points("run 1", [], loss=[]), points("run 2", [], loss=[])])
    assert empty.x == [] and empty.values == {"run 1": {"loss": []}, "run 2": {"loss": []}}


def test_final_values_are_each_lines_last_number() -> None:
    x = np.array([1.0, 2.0, 3.0])
    finals = final_values(x, {"loss": np.array([0.5, 0.4, NAN]), "lr": np.array([NAN] * 3),
                              "acc": np.array([0.1, 0.2, 0.3])})  # fmt: skip
    assert finals == {"loss": FinalValue(x=2.0, value=0.4), "acc": FinalValue(x=3.0, value=0.3)}


def test_the_parameter_table_names_the_differing_keys() -> None:
    rows = parameter_table([
        {"lr": 0.1, "epochs": 10, "layers": [64, 32], "name": "a"},
        {"lr": 0.01, "epochs": 10, "layers": [64, 32], "name": "a", "dropout": None},
        {"lr": 1, "epochs": 10.0, "layers": [64, 32], "name": "a"},
    ])  # fmt: skip
    by_name = {row.name: row for row in rows}
    assert [row.name for row in rows] == ["dropout", "epochs", "layers", "lr", "name"]
    assert {row.name for row in rows if row.differs} == {"dropout", "epochs", "lr"}
    assert by_name["dropout"].values == [None, "null", None]  # absent is not null
    assert by_name["epochs"].values == ["10", "10", "10.0"]  # the training sees 10 and 10.0
    assert by_name["layers"].values == ["[64, 32]"] * 3


def test_identical_parameters_differ_nowhere() -> None:
    rows = parameter_table([{"b": {"y": 1, "x": 2}}, {"b": {"x": 2, "y": 1}}])
    assert [(row.name, row.differs) for row in rows] == [("b", False)]
    assert parameter_table([{}, {}]) == []


def at(day: int) -> datetime:
    return datetime(2026, 11, day, 3, 0, tzinfo=UTC)


def test_the_trend_is_each_lines_final_value_oldest_run_first() -> None:
    final = lambda value: FinalValue(x=100.0, value=value)  # noqa: E731
    first = {"loss": {"loss": final(0.5), "lr": final(0.1)}}
    lines = trend([
        RunFinals(run_id=7, started_at=at(3), finals={"loss": {"loss": final(0.3)}}),
        RunFinals(run_id=4, started_at=at(1), finals=first),
        RunFinals(run_id=5, started_at=at(2), finals={}),  # wrote no metrics
    ])  # fmt: skip
    assert [(p.run_id, p.value) for p in lines["loss"]["loss"]] == [(4, 0.5), (7, 0.3)]
    assert [(p.run_id, p.started_at) for p in lines["loss"]["lr"]] == [(4, at(1))]
    assert trend([]) == {}
