"""A run's logs over HTTP: the list by node, pages from the end and from any offset, following a
live file, search with context, streamed downloads; names outside the run and other projects'
runs are not found."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from octotrain.contracts import NodeLogNames
from octotrain.planning import run_key
from octotrain.settings import get_settings
from tests.factories import VALID_TASK
from tests.plan_rows import recorded
from tests.plugins.api.conftest import Api

NODES = ["distributed-0", "distributed-1"]
TRAIN = b"".join(b"\x1b[32mepoch %d\x1b[0m loss=%d\n" % (n, n) for n in range(1, 1001))


def new_run(api: Api, name: str, *, live: bool) -> tuple[str, dict[int | str, Any]]:
    """A task with a 2-node run whose logs are in the run folder (live) or the object store."""
    task = api.client.post(
        "/api/v1/tasks", json=VALID_TASK | {"name": name}, headers=api.as_user("alice")
    ).json()
    key = run_key(f"manual__{name}")
    with default_catalog().session() as session:
        run = Run(task_id=task["id"], airflow_run_id=f"manual__{name}", node_count=2,
                  state=RunState.RUNNING if live else RunState.SUCCESS,
                  plan=recorded(run_key=key, node_indices=NODES))  # fmt: skip
        session.add(run)
        session.flush()
        run_id = run.id
    names = {node: NodeLogNames(task["id"], node) for node in NODES}
    files = {
        names["distributed-0"].train: TRAIN,
        names["distributed-0"].init: b"staged\n",
        names["distributed-1"].train: b"rank 1 \x00\xff binary\n" + b"y" * 100_000 + b"\n",
        names["distributed-1"].sidecar: b"synced\n",
    }
    folder = get_settings().runs_dir / str(task["id"]) / key / "logs"
    for file_name, data in files.items():
        if live:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / file_name).write_bytes(data)
        else:
            scratch = Path(api.store.root) / "scratch" / file_name
            scratch.parent.mkdir(parents=True, exist_ok=True)
            scratch.write_bytes(data)
            api.store.put_file(f"runs/{task['id']}/{key}/logs/{file_name}", scratch)
    return f"/api/v1/tasks/{task['id']}/runs/{run_id}/logs", {
        "task": task["id"], "folder": folder, **files,
    }  # fmt: skip


@pytest.fixture(params=[True, False], ids=["run folder", "object store"])
def run_logs(request: pytest.FixtureRequest, api: Api) -> tuple[str, dict[int | str, Any]]:
    return new_run(api, f"logs-{request.param_index}-{id(request)}", live=request.param)


def test_the_list_groups_every_file_by_node(api: Api, run_logs: tuple[str, dict]) -> None:
    base, _files = run_logs
    listed = api.client.get(base, headers=api.as_user("alice")).json()
    assert [node["node"] for node in listed["nodes"]] == NODES
    first = listed["nodes"][0]["files"]
    assert [(f["kind"], f["size"]) for f in first] == [("train", len(TRAIN)), ("init", 7)]
    assert [f["kind"] for f in listed["nodes"][1]["files"]] == ["train", "sidecar"]
    assert listed["run"]["node_count"] == 2 and "modified" in first[0]


def test_a_view_opens_at_the_end_pages_back_and_follows(
    api: Api, run_logs: tuple[str, dict]
) -> None:
    base, files = run_logs
    alice = api.as_user("alice")
    name = NodeLogNames(files["task"], "distributed-0").train
    last = api.client.get(f"{base}/{name}", params={"lines": 200}, headers=alice).json()
    assert [line["text"] for line in last["lines"]][-1] == "epoch 1000 loss=1000"  # no ANSI
    assert len(last["lines"]) == 200 and last["at_end"] and not last["at_start"]
    assert last["first_line"] == 801  # the page's lines are numbered as in the file
    back = api.client.get(f"{base}/{name}", params={"before": last["start"], "lines": 10},
                          headers=alice).json()  # fmt: skip
    assert [line["text"] for line in back["lines"]][-1] == "epoch 800 loss=800"
    assert back["first_line"] == 791
    first = api.client.get(f"{base}/{name}", params={"after": 0, "lines": 1}, headers=alice)
    assert first.json()["lines"] == [{"offset": 0, "text": "epoch 1 loss=1"}]
    assert first.json()["first_line"] == 1
    both = api.client.get(f"{base}/{name}", params={"after": 0, "before": 9}, headers=alice)
    assert both.status_code == 400 and "before or after" in both.json()["detail"]
    follow = api.client.get(f"{base}/{name}", params={"after": last["end"]}, headers=alice)
    assert follow.json()["lines"] == [] and follow.json()["at_end"]
    if isinstance(files["folder"], Path) and (files["folder"] / name).exists():
        with (files["folder"] / name).open("ab") as log:
            log.write(b"epoch 1001 loss=1\nepoch 10")
        grown = api.client.get(f"{base}/{name}", params={"after": last["end"]}, headers=alice)
        assert [line["text"] for line in grown.json()["lines"]] == ["epoch 1001 loss=1", "epoch 10"]
        assert grown.json()["partial"] and grown.json()["first_line"] == 1001


def test_binary_and_huge_lines_stay_a_readable_page(api: Api, run_logs: tuple[str, dict]) -> None:
    base, files = run_logs
    name = NodeLogNames(files["task"], "distributed-1").train
    page = api.client.get(f"{base}/{name}", headers=api.as_user("alice")).json()
    assert page["lines"][0]["text"] == "rank 1 \ufffd\ufffd binary"
    assert page["lines"][1]["text"].endswith("more characters]")


def test_search_finds_lines_with_context_across_nodes(api: Api, run_logs: tuple[str, dict]) -> None:
    base, _files = run_logs
    alice = api.as_user("alice")
    found = api.client.get(f"{base}/search", params={"q": "LOSS=500"}, headers=alice).json()
    (hit,) = found["hits"]
    assert (hit["node"], hit["line"], hit["text"]) == ("distributed-0", 500, "epoch 500 loss=500")
    assert hit["before"] == ["epoch 498 loss=498", "epoch 499 loss=499"]
    assert len(found["files"]) == 4 and found["more"] is None
    some = api.client.get(f"{base}/search", params={"q": "epoch", "limit": 10}, headers=alice)
    more = some.json()["more"]
    assert len(some.json()["hits"]) == 10 and more["line"] == 10
    rest = api.client.get(f"{base}/search", headers=alice, params={
        "q": "epoch", "limit": 5, "after_file": more["file"], "after_offset": more["offset"],
        "after_line": more["line"]})  # fmt: skip
    assert [hit["line"] for hit in rest.json()["hits"]] == [11, 12, 13, 14, 15]
    node = api.client.get(f"{base}/search", params={"q": "synced", "node": "distributed-1"},
                          headers=alice)  # fmt: skip
    assert [hit["node"] for hit in node.json()["hits"]] == ["distributed-1"]
    regex = api.client.get(f"{base}/search", params={"q": r"loss=\d0{3}$", "regex": True},
                           headers=alice)  # fmt: skip
    assert [hit["line"] for hit in regex.json()["hits"]] == [1000]
    bad = api.client.get(f"{base}/search", params={"q": "(oops", "regex": True}, headers=alice)
    assert bad.status_code == 400
    assert bad.json()["problems"][0]["field"] == "q"
    assert "not a valid regular expression" in bad.json()["problems"][0]["rule"]
    nowhere = api.client.get(f"{base}/search", params={"q": "x", "node": "distributed-9"},
                             headers=alice)  # fmt: skip
    assert nowhere.status_code == 404


def test_downloads_stream_one_file_or_all_of_them(api: Api, run_logs: tuple[str, dict]) -> None:
    base, files = run_logs
    alice = api.as_user("alice")
    name = NodeLogNames(files["task"], "distributed-0").train
    one = api.client.get(f"{base}/{name}/download", headers=alice)
    assert one.status_code == 200 and one.content == TRAIN
    assert one.headers["content-disposition"] == f'attachment; filename="{name}"'
    everything = api.client.get(f"{base}/download", headers=alice)
    assert everything.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(everything.content))
    assert archive.read(f"distributed-0/{name}") == TRAIN
    assert len(archive.namelist()) == 4


@pytest.mark.parametrize(
    "name",
    ["..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "..", "%2e%2e", "%252e%252e%252fcatalog.db",
     "train-1-distributed-7.log", "catalog.db", "..%5c..%5cetc%5cpasswd"],
)  # fmt: skip
def test_names_outside_the_run_are_not_found(
    api: Api, run_logs: tuple[str, dict], name: str
) -> None:
    base, _ = run_logs
    for suffix in ("", "/download"):
        answer = api.client.get(f"{base}/{name}{suffix}", headers=api.as_user("alice"))
        if "/logs" not in answer.url.path:  # the client resolved "..": another route was asked
            assert not answer.content.startswith(TRAIN[:16]), (name, suffix)
            continue
        assert answer.status_code == 404, (name, suffix, answer.text)


def test_other_projects_runs_are_not_found(api: Api, run_logs: tuple[str, dict]) -> None:
    base, files = run_logs
    name = NodeLogNames(files["task"], "distributed-0").train
    for user in ("bob", "carol"):
        for path in (base, f"{base}/{name}", f"{base}/{name}/download", f"{base}/download"):
            assert api.client.get(path, headers=api.as_user(user)).status_code == 404, path
        found = api.client.get(f"{base}/search", params={"q": "epoch"}, headers=api.as_user(user))
        assert found.status_code == 404
    assert api.client.get(base).status_code == 401
