"""The docs site served by the plugin (``/octotrain/manual/``): behind Airflow's login, a
folder's ``index.html``, nothing outside the built site, and a site never built answered with
how to build it."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugins.ui import manual_pages
from tests.plugins.api.conftest import Api


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A built site of two pages, and a file beside it that must not be served."""
    built = tmp_path / "site"
    (built / "reference" / "cli").mkdir(parents=True)
    (built / "index.html").write_text("<h1>Octotrain</h1>")
    (built / "reference" / "cli" / "index.html").write_text("<h1>Command line</h1>")
    (tmp_path / "secret.txt").write_text("not part of the site")
    monkeypatch.setattr(manual_pages, "SITE", built)
    return built


def test_the_site_s_pages_are_served_to_a_logged_in_user(api: Api, site: Path) -> None:
    alice = api.as_user("alice")
    home = api.client.get("/manual/", headers=alice)
    assert (home.status_code, home.text) == (200, "<h1>Octotrain</h1>")
    assert home.headers["content-type"].startswith("text/html")
    page = api.client.get("/manual/reference/cli/", headers=alice)
    assert page.text == "<h1>Command line</h1>"
    moved = api.client.get("/manual", headers=alice, follow_redirects=False)
    assert (moved.status_code, moved.headers["location"]) == (308, "manual/")
    assert api.client.get("/manual/").status_code == 401


def test_nothing_outside_the_site_is_served(api: Api, site: Path) -> None:
    alice = api.as_user("alice")
    for path in ("/manual/../secret.txt", "/manual/%2e%2e/secret.txt", "/manual/nope/"):
        answer = api.client.get(path, headers=alice)
        assert answer.status_code == 404, path
        assert "not part of the site" not in answer.text


def test_a_site_never_built_says_how_to_build_it(
    api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manual_pages, "SITE", tmp_path / "never-built")
    answer = api.client.get("/manual/", headers=api.as_user("alice"))
    assert answer.status_code == 404 and "make docs" in answer.text
