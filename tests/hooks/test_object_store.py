from pathlib import Path

import pytest

from hooks.object_store import (
    LocalFolderStore,
    download_prefix,
    object_store_from_url,
    upload_folder,
)
from octotrain.storage import ObjectStoreError


def make_tree(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha")
    (root / "sub" / "b.bin").write_bytes(b"\x00\x01" * 1000)


def test_round_trip_of_a_folder(store: LocalFolderStore, tmp_path: Path) -> None:
    make_tree(tmp_path / "src")
    uploaded = upload_folder(store, tmp_path / "src", "datasets/p/d/v1")
    assert [info.key for info in uploaded] == ["datasets/p/d/v1/a.txt", "datasets/p/d/v1/sub/b.bin"]
    download_prefix(store, "datasets/p/d/v1", tmp_path / "dst")
    assert (tmp_path / "dst" / "a.txt").read_text() == "alpha"
    assert (tmp_path / "dst" / "sub" / "b.bin").read_bytes() == b"\x00\x01" * 1000


def test_dotfiles_are_objects_but_partial_writes_are_not(
    store: LocalFolderStore, tmp_path: Path
) -> None:
    (tmp_path / "f").write_text("x")
    store.put_file("models/p/r/1/.hydra/config.yaml", tmp_path / "f")
    (store.root / "models/p/r/1/.w.bin.octotrain-partial-123").write_text("half")
    assert [info.key for info in store.list("models/p/r/1")] == ["models/p/r/1/.hydra/config.yaml"]


def test_copy_and_delete_prefix(store: LocalFolderStore, tmp_path: Path) -> None:
    make_tree(tmp_path / "src")
    upload_folder(store, tmp_path / "src", "staging/models/p/r/run")
    assert store.copy_prefix("staging/models/p/r/run", "models/p/r/1") == 2
    assert store.delete_prefix("staging/models/p/r/run") == 2
    assert store.list("staging/models/p/r/run") == []
    assert len(store.list("models/p/r/1")) == 2
    assert store.delete_prefix("models/p/r/never") == 0


@pytest.mark.parametrize("key", ["../escape", "/abs/path", "a//b", "a/./b", "", "a/../../b"])
def test_keys_cannot_escape_the_store(store: LocalFolderStore, tmp_path: Path, key: str) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ObjectStoreError, match="invalid object key"):
        store.put_file(key, tmp_path / "f")


def test_missing_object_names_the_key(store: LocalFolderStore, tmp_path: Path) -> None:
    with pytest.raises(ObjectStoreError, match="datasets/x does not exist"):
        store.get_file("datasets/x", tmp_path / "x")


def test_store_from_url(tmp_path: Path) -> None:
    assert isinstance(object_store_from_url(f"file://{tmp_path}"), LocalFolderStore)
    with pytest.raises(ObjectStoreError, match="only file://"):
        object_store_from_url("s3://bucket")
