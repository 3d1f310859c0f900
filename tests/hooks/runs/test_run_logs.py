"""A run's log files where they are (run folder, local store, S3): listed by node, read in pages,
searched with context and resumed, streamed, zipped."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from hooks.runs.log_search import search
from hooks.runs.run_files import folder_then_store
from hooks.runs.run_logs import RunLogs
from hooks.storage.object_store import object_store_from_url
from octotrain.contracts import NodeLogNames
from octotrain.errors import InvalidQuery, NotFound
from octotrain.log_search import SearchQuery
from octotrain.log_text import tail
from octotrain.run_layout import RunLayout
from tests.pipe_reader import PipeReader

NODES = ["distributed-0", "distributed-1"]
TRAIN_0 = b"".join(b"epoch %d loss=0.%d\n" % (n, n) for n in range(1, 501)) + (
    b"\x1b[31mERROR\x1b[0m CUDA out of memory\nafter 1\nafter 2\nafter 3\n"
)
TRAIN_1 = "step 1\n训练 Äpfel error\n".encode() + b"binary \x00\xff here\n"


@pytest.fixture(params=["run folder", "local store", "s3"])
def logs(request: pytest.FixtureRequest, tmp_path: Path) -> RunLogs:
    layout = RunLayout(tmp_path / "runs", 7, "manual__1-abc")
    files = {
        NodeLogNames(7, "distributed-0").train: TRAIN_0,
        NodeLogNames(7, "distributed-0").init: b"staged 3 files\n",
        NodeLogNames(7, "distributed-1").train: TRAIN_1,
        NodeLogNames(7, "distributed-1").supplemental: b"exit code 137: OOMKilled\n",
        "unrelated.txt": b"error not a log of the contract\n",
    }
    url = (
        request.getfixturevalue("s3_bucket")
        if request.param == "s3"
        else f"file://{tmp_path / 'objects'}"
    )
    store = object_store_from_url(url)
    for name, data in files.items():
        if request.param == "run folder":
            layout.logs_dir.mkdir(parents=True, exist_ok=True)
            layout.log_path(name).write_bytes(data)
        else:
            (tmp_path / name).write_bytes(data)
            store.put_file(layout.objects.log(name), tmp_path / name)
    live = request.param == "run folder"  # a live local run's; else a collected run's
    return RunLogs(folder_then_store(layout, store, live=live), NODES)


def test_files_are_listed_by_node_and_kind(logs: RunLogs) -> None:
    listed = [(log.node, log.kind, log.size) for log in logs.files()]
    assert listed == [
        ("distributed-0", "train", len(TRAIN_0)),
        ("distributed-0", "init", 15),
        ("distributed-1", "train", len(TRAIN_1)),
        ("distributed-1", "supplemental", 25),
    ]
    assert next(log.name for log in logs.node_files("distributed-1")) == "train-7-distributed-1.log"
    with pytest.raises(NotFound, match="no node 'distributed-7'"):
        logs.node_files("distributed-7")
    for name in ("unrelated.txt", "../../etc/passwd", "/etc/passwd", "%2e%2e", ""):
        with pytest.raises(NotFound):
            logs.file(name)


def test_pages_and_streams_read_the_same_bytes(logs: RunLogs) -> None:
    train = logs.file("train-7-distributed-0.log")
    page = tail(logs.ranges(train), 4)
    assert [line.text for line in page.lines] == [
        "ERROR CUDA out of memory", "after 1", "after 2", "after 3",
    ]  # fmt: skip
    assert b"".join(logs.chunks(train)) == TRAIN_0
    assert b"".join(logs.chunks(train, start=len(TRAIN_0) - 8)) == b"after 3\n"
    for start in (0, len(TRAIN_0) - 8):
        reader = PipeReader()
        assert logs.send_to(train, reader.writing, start=start) == len(TRAIN_0) - start
        assert reader.finish() == TRAIN_0[start:]


def test_a_search_names_file_line_offset_and_context(logs: RunLogs) -> None:
    result = search(logs, logs.node_files(None), SearchQuery("cuda OUT of", context=2))
    (hit,) = result.hits
    assert (hit.file, hit.node, hit.line) == ("train-7-distributed-0.log", "distributed-0", 501)
    assert TRAIN_0[hit.offset :].startswith(b"\x1b[31mERROR")
    assert hit.text == "ERROR CUDA out of memory"
    assert hit.before == ["epoch 499 loss=0.499", "epoch 500 loss=0.500"]
    assert hit.after == ["after 1", "after 2"]
    assert result.more is None and len(result.files) == 4


def test_case_folding_beyond_ascii_and_binary_lines(logs: RunLogs) -> None:
    found = search(logs, logs.node_files("distributed-1"), SearchQuery("äPFEL"))
    assert [hit.line for hit in found.hits] == [2]
    assert found.hits[0].text == "训练 Äpfel error"
    binary = search(logs, logs.node_files("distributed-1"), SearchQuery("binary"))
    assert binary.hits[0].text == "binary \ufffd\ufffd here"
    exact = SearchQuery("ERROR", case_sensitive=True, context=0)
    assert [hit.node for hit in search(logs, logs.node_files(None), exact).hits] == [
        "distributed-0"
    ]


def test_a_limited_search_resumes_without_gaps_or_repeats(logs: RunLogs) -> None:
    query = SearchQuery("loss=0.", limit=120, context=0)
    seen, cursor = [], None
    while True:
        result = search(logs, logs.node_files(None), query, cursor)
        seen.extend(hit.line for hit in result.hits)
        if result.more is None:
            break
        cursor = result.more
    assert seen == list(range(1, 501))


def test_regular_expressions_and_their_mistakes(logs: RunLogs) -> None:
    found = search(logs, logs.node_files(None), SearchQuery(r"epoch \d*5 loss", regex=True))
    assert len(found.hits) == 50
    with pytest.raises(InvalidQuery) as refused:
        search(logs, logs.node_files(None), SearchQuery("(unclosed", regex=True))
    [problem] = refused.value.problems
    assert problem.field == "q"
    assert problem.rule.startswith("not a valid regular expression: ")
    assert "parenthes" in problem.rule  # grep's reason,
    assert "grep" not in problem.rule  # without the path of the binary (/usr/bin/grep: …)
    bad_queries = [
        {"text": ""},
        {"text": "a\nb"},
        {"text": "x", "context": 11},
        {"text": "x", "limit": 0},
    ]
    for bad in bad_queries:
        with pytest.raises(InvalidQuery):
            SearchQuery(**bad)


def test_every_file_of_the_run_in_one_zip(logs: RunLogs) -> None:
    archive = zipfile.ZipFile(io.BytesIO(b"".join(logs.zip_chunks())))
    assert sorted(archive.namelist()) == sorted(f"{log.node}/{log.name}" for log in logs.files())
    assert archive.read("distributed-0/train-7-distributed-0.log") == TRAIN_0
    assert archive.testzip() is None
