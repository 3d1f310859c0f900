"""The node agent's parsers: quantities, the path and DNS rewriting, ``$(VAR)`` expansion, log
timestamps; the pieces whose mistakes would make a pod behave unlike on a cluster, without any
HTTP in the way."""

from __future__ import annotations

from fractions import Fraction

import pendulum
import pytest

from tests.k8s_node_agent.quantities import parse_quantity, pod_requests
from tests.k8s_node_agent.rewrite import Rewriter, expand
from tests.k8s_node_agent.timestamps import rfc3339_nano


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("0.5", Fraction(1, 2)),
        ("128Mi", Fraction(128 * 2**20)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("1G", Fraction(10**9)),
        ("100M", Fraction(10**8)),
        ("1e3", Fraction(1000)),
        ("4096", Fraction(4096)),
        (3, Fraction(3)),
    ],
)
def test_quantities(text: str | int, value: Fraction) -> None:
    assert parse_quantity(text) == value


def test_bad_quantities_are_refused() -> None:
    for text in ("", "1.2.3", "12XB", "Mi"):
        with pytest.raises(ValueError):
            parse_quantity(text)


def test_pod_requests_take_the_larger_of_init_and_regular_containers() -> None:
    spec = {
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4"}}}],
        "containers": [
            {"name": "a", "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": "2"}}},
            {"name": "b", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
        ],
    }
    assert pod_requests(spec) == {
        "cpu": Fraction(4),
        "nvidia.com/gpu": Fraction(2),
        "memory": Fraction(2**30),
    }


def test_paths_are_rewritten_where_they_stand_for_mounts() -> None:
    rewrite = Rewriter([("/data", "/host/d"), ("/data/sub", "/host/s"), ("/out/", "/host/o")], "ns")
    assert rewrite("/data") == "/host/d"
    assert rewrite("/data/x.txt") == "/host/d/x.txt"
    assert rewrite("/data/sub/y") == "/host/s/y"  # the longest mount path wins
    assert rewrite("/out/file") == "/host/o/file"
    assert rewrite("--input=/data/x") == "--input=/host/d/x"
    assert rewrite("cat /data/a > /out/b") == "cat /host/d/a > /host/o/b"
    assert rewrite("/a:/data") == "/a:/host/d"
    for untouched in ("/database", "/x/data", "./data", "s3://bucket/data", "http://h/data"):
        assert rewrite(untouched) == untouched


def test_cluster_host_names_are_rewritten_to_loopback() -> None:
    rewrite = Rewriter([], "team", subdomains=["train"], services=["redis"])
    assert rewrite("node-0.train.team.svc.cluster.local:29500") == "127.0.0.1:29500"
    assert rewrite("other.elsewhere.svc.cluster.local") == "127.0.0.1"
    assert rewrite("node-1.train") == "127.0.0.1"
    assert rewrite("tcp://node-1.train.team:1234") == "tcp://127.0.0.1:1234"
    assert rewrite("redis.team.svc") == "127.0.0.1"
    for untouched in ("train.py", "node-1.train.example.com", "example.com"):
        assert rewrite(untouched) == untouched


def test_variable_expansion() -> None:
    variables = {"A": "1", "B": "two"}
    assert expand("$(A)-$(B)", variables) == "1-two"
    assert expand("$(MISSING)", variables) == "$(MISSING)"
    assert expand("$$(A)", variables) == "$(A)"


def test_log_timestamps_are_rfc3339_nano_and_parse() -> None:
    stamp = rfc3339_nano(1_700_000_000_123_456_700)
    assert stamp == "2023-11-14T22:13:20.1234567Z"  # trailing zeros dropped, as in Go
    assert rfc3339_nano(1_700_000_000_000_000_000) == "2023-11-14T22:13:20Z"
    assert pendulum.parse(stamp).microsecond == 123456
