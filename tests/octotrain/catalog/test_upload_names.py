"""The names of imported files: one rule for the REST API and the command line (each part of
a path at most 255 bytes, the whole object key within the store's limit, no control
characters), and every name it accepts really written and read back, on both stores."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from hooks.storage.local_store import LocalFolderStore
from hooks.storage.s3_store import s3_store_from_url
from octotrain.catalog.dataset_versions import DatasetVersions, dataset_version_prefix
from octotrain.catalog.model_versions import ModelVersions
from octotrain.catalog.uploads import check_files, check_paths
from octotrain.errors import InvalidInput
from octotrain.storage import ObjectStore
from tests.factories import ADMIN
from tests.file_names import name_of, path_of

PREFIX = "datasets/demo/house-prices/v9"
DEEP = ("demo", "house-prices", "v10")


def refusal(paths: list[str], **limits: object) -> list[tuple[str, str]]:
    with pytest.raises(InvalidInput) as refused:
        if limits:
            check_files(dict.fromkeys(paths, Path()), **limits)  # type: ignore[arg-type]
        else:
            check_paths(paths)
    return [(problem.field, problem.rule) for problem in refused.value.problems]


def test_a_part_of_255_bytes_is_accepted_and_256_refused_naming_the_file() -> None:
    check_paths([name_of(255), f"{name_of(254)}/{name_of(255)}", name_of(224)])
    too_long = f"weights/{name_of(256)}"
    assert refusal([too_long, "ok.bin"]) == [
        (
            f"files.{too_long}",
            "each folder or file name in a path may be at most 255 bytes (UTF-8); "
            "this path has one of 256 bytes",
        )
    ]


@pytest.mark.parametrize(
    "path", ["tab\there", "new\nline", "bell\x07", "del\x7f", "c1\x85", "\x1b[31mred"]
)
def test_control_characters_are_refused(path: str) -> None:
    assert refusal([path]) == [(f"files.{path}", "must not contain control characters")]


def test_a_name_that_is_not_utf_8_is_refused() -> None:
    undecodable = "caf\udce9.txt"  # how Python names a file whose bytes are not UTF-8
    assert refusal([undecodable]) == [(f"files.{undecodable}", "must be valid UTF-8")]


def test_a_file_cannot_also_be_a_folder() -> None:
    """No file system (the local store's, a node's) holds both: ``model`` and ``model/a``."""
    assert refusal(["model", "model/a.bin", "model/b.bin", "other"]) == [
        ("files.model", "is a file and also the folder of 'model/a.bin'")
    ]


def test_a_key_over_the_store_limit_is_refused_with_the_limit() -> None:
    prefix_bytes = len(PREFIX.encode()) + 1
    fits = "a" * (100 - prefix_bytes)
    check_files({fits: Path()}, prefix=PREFIX, max_key_bytes=100)
    over = fits + "b"
    assert refusal([over, fits], prefix=PREFIX, max_key_bytes=100) == [
        (
            f"files.{over}",
            f"its object key '{PREFIX}/{over}' would be 101 bytes (UTF-8); the object store "
            f"holds keys of at most 100 bytes, so a path here may be at most "
            f"{100 - prefix_bytes} bytes",
        )
    ]


@pytest.fixture(params=["local", "s3"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalFolderStore(tmp_path / "objects")
    url = request.getfixturevalue("s3_bucket")
    return s3_store_from_url(url, attempts=2, first_wait_seconds=0.05)


def test_every_accepted_name_is_imported_and_read_back_on_both_stores(
    rule_session: Session, any_store: ObjectStore, tmp_path: Path
) -> None:
    source = tmp_path / "source.bin"
    source.write_bytes(b"weights")
    names = [name_of(224), name_of(255), f"a/{name_of(255)}", "100%25 sure.txt", "é"]
    deepest = path_of(any_store.max_key_bytes - len(dataset_version_prefix(*DEEP).encode()) - 1)
    datasets = DatasetVersions(rule_session, ADMIN, any_store)
    imported = [
        datasets.create("demo", "house-prices", {"version": "v9"}, dict.fromkeys(names, source)),
        datasets.create(*DEEP[:2], {"version": DEEP[2]}, {deepest: source}),
        ModelVersions(rule_session, ADMIN, any_store).import_files(
            "demo", "house-price-model", {}, {name_of(255): source}
        ),
    ]
    assert len(f"{imported[1].object_prefix}/{deepest}".encode()) == any_store.max_key_bytes
    for row, paths in zip(imported, (names, [deepest], [name_of(255)]), strict=True):
        for path in paths:
            copy = tmp_path / "copy.bin"
            any_store.get_file(f"{row.object_prefix}/{path}", copy)
            assert copy.read_bytes() == b"weights"
        assert len(any_store.list(row.object_prefix)) == len(paths)


def test_a_refused_import_writes_no_version_and_no_object(
    rule_session: Session, any_store: ObjectStore, tmp_path: Path
) -> None:
    source = tmp_path / "source.bin"
    source.write_bytes(b"weights")
    over_limit = path_of(any_store.max_key_bytes)
    versions = DatasetVersions(rule_session, ADMIN, any_store)
    for bad in (name_of(256), over_limit):
        with pytest.raises(InvalidInput, match="bytes"):
            versions.create(
                "demo", "house-prices", {"version": "v9"}, {"ok.txt": source, bad: source}
            )
    assert [row.version for row in versions.list("demo", "house-prices")] == ["v1"]
    assert any_store.list("datasets") == []
