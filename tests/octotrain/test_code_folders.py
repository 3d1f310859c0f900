"""An algorithm's code folder, read from disk or unpacked from a zip: what is taken, and
what is refused (paths out of the folder, links, more bytes than allowed, nothing at all)."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from octotrain.code_folders import check_total, folder_files, unpacked_zip
from octotrain.errors import InvalidInput

MIB = 1024 * 1024


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text("print('hi')\n")
    (root / "pkg" / "util.py").write_text("X = 1\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: main\n")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "util.cpython-311.pyc").write_bytes(b"\0")
    return root


def test_a_folder_gives_its_files_by_path_without_version_control_or_byte_code(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path / "algo")
    (root / "link.py").symlink_to(root / "train.py")  # inside: its content is uploaded
    files = folder_files(root, max_bytes=MIB)
    assert sorted(files) == ["link.py", "pkg/util.py", "train.py"]
    assert files["link.py"].read_text() == "print('hi')\n"


def test_a_link_out_of_the_folder_or_to_a_folder_is_refused_by_its_path(tmp_path: Path) -> None:
    root = _tree(tmp_path / "algo")
    (tmp_path / "secret.txt").write_text("password")
    (root / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (root / "alias").symlink_to(root / "pkg", target_is_directory=True)
    with pytest.raises(InvalidInput) as caught:
        folder_files(root, max_bytes=MIB)
    assert {(p.field, p.rule) for p in caught.value.problems} == {
        ("code.leak.txt", "is a symbolic link out of the folder"),
        ("code.alias", "is a symbolic link to a folder"),
    }


def test_a_folder_over_the_bound_is_refused_naming_the_setting(tmp_path: Path) -> None:
    root = _tree(tmp_path / "algo")
    (root / "weights.bin").write_bytes(b"\0" * (MIB + 1))
    with pytest.raises(InvalidInput, match=r"code: must be at most 1 MiB in all \(max_code_mb\)"):
        folder_files(root, max_bytes=MIB)


def _zip(path: Path, members: dict[str, bytes], *, links: tuple[str, ...] = ()) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return path


def test_a_zip_of_one_folder_gives_that_folder_s_content(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", {"algo/train.py": b"1", "algo/pkg/u.py": b"22",
                                         "__MACOSX/algo/._train.py": b"x"})  # fmt: skip
    into = tmp_path / "out"
    into.mkdir()
    files = unpacked_zip(archive, into, max_bytes=MIB)
    assert {path: file.read_bytes() for path, file in files.items()} == {
        "train.py": b"1",
        "pkg/u.py": b"22",
    }


def test_a_zip_with_several_top_entries_keeps_its_paths(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", {"train.py": b"1", "pkg/u.py": b"2"})
    into = tmp_path / "out"
    into.mkdir()
    assert sorted(unpacked_zip(archive, into, max_bytes=MIB)) == ["pkg/u.py", "train.py"]


@pytest.mark.parametrize(
    ("members", "links", "field", "rule"),
    [
        ({"../evil.py": b"x", "ok.py": b"y"}, (), "archive.../evil.py", "leaves the folder"),
        ({"/etc/cron.d/x": b"x"}, (), "archive./etc/cron.d/x", "leaves the folder"),
        ({"ok.py": b"y"}, ("link",), "archive.link", "is a symbolic link"),
    ],
)
def test_a_zip_member_that_leaves_the_folder_or_is_a_link_is_refused_before_writing(
    tmp_path: Path, members: dict[str, bytes], links: tuple[str, ...], field: str, rule: str
) -> None:
    archive = _zip(tmp_path / "a.zip", members, links=links)
    into = tmp_path / "out"
    into.mkdir()
    with pytest.raises(InvalidInput) as caught:
        unpacked_zip(archive, into, max_bytes=MIB, field="archive")
    assert [p.field for p in caught.value.problems] == [field]
    assert caught.value.problems[0].rule.startswith(rule)
    assert list(into.iterdir()) == []


def test_a_small_zip_that_unpacks_past_the_bound_is_refused_before_writing(
    tmp_path: Path,
) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as writing:
        writing.writestr("zeros.bin", b"\0" * (4 * MIB))
    assert archive.stat().st_size < 16 * 1024
    into = tmp_path / "out"
    into.mkdir()
    with pytest.raises(InvalidInput, match=r"archive: must be at most 1 MiB .*got 4\.0 MiB"):
        unpacked_zip(archive, into, max_bytes=MIB, field="archive")
    assert list(into.iterdir()) == []


def test_a_zip_whose_sizes_lie_is_refused(tmp_path: Path) -> None:
    """zipfile reads no more than a member says it holds: the rest fails its checksum."""
    archive = tmp_path / "liar.zip"
    with zipfile.ZipFile(archive, "w") as writing:
        writing.writestr("big.bin", b"\1" * (2 * MIB))
    size = (2 * MIB).to_bytes(4, "little")
    archive.write_bytes(archive.read_bytes().replace(size, (1).to_bytes(4, "little")))
    into = tmp_path / "out"
    into.mkdir()
    with pytest.raises(InvalidInput, match="archive: is not a readable zip file"):
        unpacked_zip(archive, into, max_bytes=MIB, field="archive")


def test_what_is_not_a_zip_says_so(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    path.write_text("not a zip")
    with pytest.raises(InvalidInput, match="archive: is not a readable zip file"):
        unpacked_zip(path, tmp_path, max_bytes=MIB, field="archive")


def test_uploaded_files_are_bounded_in_all(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"\0" * (MIB + 1))
    with pytest.raises(InvalidInput, match="files: must be at most 1 MiB"):
        check_total({"big": big}, max_bytes=MIB, field="files")
