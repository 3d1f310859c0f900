"""Catalog management from the command line: documents in, views out, refusals explained,
exit status 1 on any refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import app
from octotrain.settings import get_settings
from tests.cli.conftest import Cli
from tests.file_names import name_of

pytestmark = pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)


def test_a_resource_spec_from_a_yaml_file(cli: Cli) -> None:
    path = cli.write("spec.yaml", "name: gpu-1\ncpu: 8\nmemory_mib: 32768\ngpu_count: 1\n")
    created = cli.json("resource-spec", "create", "-f", path, "-p", "demo")
    assert (created["name"], created["gpu_count"], created["kind"]) == ("gpu-1", 1, "cce")
    listed = cli("resource-spec", "list", "-p", "demo")
    assert listed.exit_code == 0 and "gpu-1" in listed.stdout and "cpu-small" in listed.stdout
    changed = cli.write("change.yaml", "max_nodes: 8\n")
    assert (
        cli.json("resource-spec", "update", "gpu-1", "-f", changed, "-p", "demo")["max_nodes"] == 8
    )
    assert cli("resource-spec", "delete", "gpu-1", "-p", "demo").exit_code == 0
    missing = cli("resource-spec", "show", "gpu-1", "-p", "demo")
    assert missing.exit_code == 1
    assert "resource spec 'gpu-1' not found in project 'demo'" in missing.stderr


def test_broken_rules_are_listed_one_per_line(cli: Cli) -> None:
    path = cli.write("bad.json", '{"name": "x y", "cpu": -1, "memory_mib": 1, "extra": 1}')
    result = cli("resource-spec", "create", "-f", path, "-p", "demo")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "error: 3 rule(s) broken, nothing was saved:",
        "  name: must be 1-64 characters of Chinese or English letters, digits, '_' and '-'",
        "  cpu: must be more than 0, got -1",
        "  extra: is not a known field",
    ]


def test_documents_that_cannot_be_read_are_refused_by_name(cli: Cli) -> None:
    result = cli("algorithm", "create", "-f", cli.root / "missing.yaml", "-p", "demo")
    assert result.exit_code == 1 and "cannot read" in result.stderr
    bad = cli.write("bad.yaml", "name: [unclosed\n")
    result = cli("algorithm", "create", "-f", bad, "-p", "demo")
    assert result.exit_code == 1 and "is not valid YAML or JSON" in result.stderr


def test_a_dataset_version_from_a_folder_and_a_cache_of_it(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    (folder / "images").mkdir(parents=True)
    (folder / "labels.csv").write_text("a,b\n")
    (folder / "images" / "0.png").write_bytes(b"\x89PNG")
    version = cli.json("dataset", "version", "import", "house-prices", "v2", "--from", folder,
                       "-p", "demo")  # fmt: skip
    assert (version["status"], version["file_count"]) == ("imported_awaiting_release", 2)
    published = cli.json("dataset", "version", "publish", "house-prices", "v2", "-p", "demo")
    assert published["status"] == "published"
    cache = cli.write("cache.yaml", "name: hp-cache\ndataset: house-prices\nversion: v2\n")
    assert cli.json("cache", "create", "-f", cache, "-p", "demo")["status"] == "caching"
    [filled] = cli.json("cache", "fill")  # the data-cache job, run here
    assert (filled["name"], filled["status"], filled["file_count"]) == ("hp-cache", "cached", 2)
    refreshed = cli.json("cache", "refresh", "hp-cache", "--ttl-hours", "2", "-p", "demo")
    assert (refreshed["refresh_requested"], refreshed["ttl_hours"]) == (True, 2)
    assert cli.json("cache", "fill")[0]["refresh_requested"] is False
    refused = cli("dataset", "version", "delete", "house-prices", "v2", "-p", "demo")
    assert refused.exit_code == 1
    assert "still referenced by data cache 'hp-cache'" in refused.stderr


def test_projects_members_and_model_imports(cli: Cli, tmp_path: Path) -> None:
    project = cli.write("project.yaml", "name: 视觉\nmax_nodes: 16\n")
    assert cli.json("project", "create", "-f", project)["max_nodes"] == 16
    assert cli.json("project", "member", "add", "视觉", "bob")["members"] == ["bob"]
    assert cli.json("project", "member", "remove", "视觉", "bob")["members"] == []
    weights = tmp_path / "model.bin"
    weights.write_bytes(b"w" * 10)
    imported = cli.json("model-repository", "version", "import", "house-price-model",
                        "--from", weights, "--description", "seed", "-p", "demo")  # fmt: skip
    assert (imported["version"], imported["size_bytes"]) == (1, 10)
    shown = cli.json("model-repository", "version", "show", "house-price-model", "1", "-p", "demo")
    assert shown["lineage"]["imported_by"] == get_settings().airflow_username


def test_the_project_option_comes_from_the_environment(cli: Cli) -> None:
    result = cli.runner.invoke(app, ["algorithm", "list"], env={"OCTOTRAIN_PROJECT": "demo"})
    assert result.exit_code == 0 and "linear-regression-numpy" in result.stdout


def test_an_import_judges_file_names_as_the_rest_api_does(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    for name in (name_of(224), name_of(255), "bell\x07.txt"):
        (folder / name).write_text("x")
    (folder / "caf\udce9.txt").write_text("x")  # a name whose bytes are not UTF-8
    refused = cli("dataset", "version", "import", "house-prices", "v2", "--from", folder,
                  "-p", "demo")  # fmt: skip
    assert refused.exit_code == 1, refused.output
    assert refused.stderr.splitlines()[1:] == [
        "  files.bell\x07.txt: must not contain control characters",
        "  files.caf\\udce9.txt: must be valid UTF-8",  # printed with a backslash escape
    ]
    (folder / "bell\x07.txt").unlink()
    (folder / "caf\udce9.txt").unlink()
    version = cli.json("dataset", "version", "import", "house-prices", "v2", "--from", folder,
                       "-p", "demo")  # fmt: skip
    assert version["file_count"] == 2


def test_lowering_max_nodes_below_a_saved_task_is_refused_with_the_tasks(cli: Cli) -> None:
    lower = cli.write("lower.yaml", "max_nodes: 1\n")
    refused = cli("resource-spec", "update", "cpu-small", "-f", lower, "-p", "demo")
    assert refused.exit_code == 1
    assert "cannot have max_nodes 1: it is still referenced by task '演示-房价回归' (2 nodes)" in (
        refused.stderr
    )
    assert cli.json("resource-spec", "show", "cpu-small", "-p", "demo")["max_nodes"] > 1


def test_an_algorithm_with_its_code_folder_and_the_next_version_of_it(
    cli: Cli, tmp_path: Path
) -> None:
    folder = tmp_path / "algo"
    (folder / "lib").mkdir(parents=True)
    (folder / "train.py").write_text("print('trained')\n")
    (folder / "lib" / "util.py").write_text("X = 1\n")
    document = cli.write(
        "algo.yaml",
        "name: coded\nimage: python:3.11-slim\ncommand: [python, train.py]\nsample_type: table\n",
    )
    created = cli.json("algorithm", "create", "-f", document, "--code", folder, "-p", "demo")
    assert [v["version"] for v in created["code_versions"]] == [1]
    (folder / "train.py").write_text("print('trained again')\n")
    second = cli.json("algorithm", "code", "upload", "coded", folder, "-p", "demo")
    assert second["version"] == 2 and second["file_count"] == 2
    shown = cli.json("algorithm", "code", "show", "coded", "2", "-p", "demo")
    assert [f["path"] for f in shown["files"]] == ["lib/util.py", "train.py"]
    listed = cli("algorithm", "code", "list", "coded", "-p", "demo")
    assert listed.exit_code == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == ["1", "2"]


def test_a_code_folder_with_a_link_out_of_it_makes_no_algorithm(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "algo"
    folder.mkdir()
    (folder / "train.py").write_text("print('trained')\n")
    (tmp_path / "secret").write_text("password")
    (folder / "secret").symlink_to(tmp_path / "secret")
    document = cli.write(
        "algo.yaml",
        "name: leaky\nimage: python:3.11-slim\ncommand: [python, train.py]\nsample_type: table\n",
    )
    result = cli("algorithm", "create", "-f", document, "--code", folder, "-p", "demo")
    assert result.exit_code == 1
    assert "code.secret: is a symbolic link out of the folder" in result.stderr
    assert cli("algorithm", "show", "leaky", "-p", "demo").exit_code == 1
