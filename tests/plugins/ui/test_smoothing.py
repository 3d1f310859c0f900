"""The charts' smoothing (plugins/ui/static/smoothing.js, run by node) against a reference
computation of TensorBoard's debiased exponential moving average."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "plugins" / "ui" / "static" / "smoothing.js"


def reference(values: list[float | None], weight: float) -> list[float | None]:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if all(v == finite[0] for v in finite):
        return values
    last, count, out = 0.0, 0, []
    for value in values:
        if value is None or not math.isfinite(value):
            out.append(value)
            continue
        last = last * weight + (1 - weight) * value
        count += 1
        out.append(last / (1 if weight == 1 else 1 - weight**count))
    return out


def smoothed_by_node(values: list[float | None], weight: float) -> list[float | None]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("the smoothing test needs node (it comes with npm, which `make sync` uses)")
    program = (
        f"const {{ smooth }} = require({json.dumps(str(SCRIPT))});"
        f"const values = {json.dumps(values)}.map((v) => (v === null ? NaN : v));"
        f"const out = smooth(values, {weight}).map((v) => (Number.isNaN(v) ? null : v));"
        "console.log(JSON.stringify(out));"
    )
    return json.loads(subprocess.run([node, "-e", program], capture_output=True, text=True,
                                      check=True).stdout)  # fmt: skip


@pytest.mark.parametrize("weight", [0.0, 0.6, 0.9, 0.999, 1.0])
def test_the_page_smooths_as_tensorboard_does(weight: float) -> None:
    values: list[float | None] = [math.sin(n / 7) + (n % 5) * 0.1 for n in range(200)]
    values[50] = None  # a gap stays a gap
    ours, expected = smoothed_by_node(values, weight), reference(values, weight)
    for got, want in zip(ours, expected, strict=True):
        assert (got is None and want is None) or math.isclose(
            got, want, rel_tol=1e-12, abs_tol=1e-12
        )
    if 0 < weight < 1:
        assert ours[0] == values[0]  # debiased: the first point is not pulled towards 0


def test_a_constant_line_stays_constant() -> None:
    assert smoothed_by_node([2.0, 2.0, None, 2.0], 0.6) == [2.0, 2.0, None, 2.0]
