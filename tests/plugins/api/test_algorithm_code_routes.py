"""An algorithm's code over REST: uploaded as files or as one zip, each upload the next
version; listed, shown with its files, downloaded one file at a time or as a zip; bad uploads
refused by field with nothing left behind; only for the project's members."""

from __future__ import annotations

import io
import stat
import zipfile

from tests.plugins.api.conftest import Api

CODE = "/api/v1/projects/demo/algorithms/linear-regression-numpy/code"
FILES = {"train.py": b"print('trained')\n", "lib/helpers.py": b"X = 1\n"}


def _zip(members: dict[str, bytes], *, link: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def _versions(api: Api) -> list[int]:
    answer = api.client.get(CODE, headers=api.as_user("alice"))
    assert answer.status_code == 200, answer.text
    return [row["version"] for row in answer.json()["code_versions"]]


def test_files_or_a_zip_each_make_the_next_version_with_its_files_to_download(api: Api) -> None:
    alice = api.as_user("alice")
    before = _versions(api)
    as_files = api.client.post(
        CODE,
        files=[("files", (name, content, "text/x-python")) for name, content in FILES.items()],
        headers=alice,
    )
    assert as_files.status_code == 201, as_files.text
    assert as_files.json()["file_count"] == 2
    zipped = {f"my-algo/{name}": content for name, content in FILES.items()}
    as_zip = api.client.post(
        CODE, files={"archive": ("algo.zip", _zip(zipped), "application/zip")}, headers=alice
    )
    assert as_zip.status_code == 201, as_zip.text
    version = as_zip.json()["version"]
    assert _versions(api) == [*before, version - 1, version]
    assert as_zip.json()["content_digest"] == as_files.json()["content_digest"]  # same files
    shown = api.client.get(f"{CODE}/{version}", headers=alice).json()
    assert shown["files"] == [
        {"path": "lib/helpers.py", "size_bytes": 6},
        {"path": "train.py", "size_bytes": 17},
    ]
    one = api.client.get(f"{CODE}/{version}/files/lib/helpers.py", headers=alice)
    assert one.status_code == 200 and one.content == FILES["lib/helpers.py"]
    whole = api.client.get(f"{CODE}/{version}/download", headers=alice)
    with zipfile.ZipFile(io.BytesIO(whole.content)) as archive:
        assert {name: archive.read(name) for name in archive.namelist()} == FILES
    algorithm = api.client.get(CODE.removesuffix("/code"), headers=alice).json()
    assert algorithm["code_versions"][-1]["version"] == version
    assert api.client.get(f"{CODE}/{version}", headers=api.as_user("bob")).status_code == 404
    assert api.client.get(CODE).status_code == 401


def test_bad_uploads_are_refused_by_field_and_leave_no_version(api: Api) -> None:
    alice = api.as_user("alice")
    before = _versions(api)
    cases = [
        ({"archive": ("a.zip", _zip({"../evil.py": b"x"}), "application/zip")},
         "archive.../evil.py", "leaves the folder"),
        ({"archive": ("a.zip", _zip({"ok.py": b"x"}, link="escape"), "application/zip")},
         "archive.escape", "is a symbolic link"),
        ({"archive": ("a.zip", b"no zip", "application/zip")},
         "archive", "is not a readable zip file"),
        ({"archive": ("a.zip", _zip({}), "application/zip")},
         "archive", "at least one file is needed"),
        ([("files", ("../up.py", b"x", "text/plain"))],
         "files.../up.py", "must be a relative path"),
        ({}, "files", "give the code as files or as one zip"),
    ]  # fmt: skip
    for files, field, rule in cases:
        answer = api.client.post(CODE, files=files, headers=alice)
        assert answer.status_code == 422, (field, answer.text)
        problem = answer.json()["problems"][0]
        assert problem["field"] == field and problem["rule"].startswith(rule), problem
    assert _versions(api) == before
