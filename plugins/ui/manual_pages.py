"""The docs site (``docs/``, built by ``make docs`` into ``site/``), served by the plugin under
``/octotrain/manual/`` behind Airflow's login like every other route, for the console's "Docs"
link and the entry in Airflow's Docs menu.

Only files inside the built site are served: a path is resolved and must stay under it (``..``
and links out of it answer 404), and a folder serves its ``index.html`` (the site's pages are
``<page>/index.html``). A site that was never built answers 404 saying how to build it.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from airflow.api_fastapi.core_api.security import get_user
from fastapi import APIRouter, Depends
from fastapi.responses import FileResponse, RedirectResponse

from octotrain.errors import NotFound
from octotrain.settings import REPO_ROOT

SITE = REPO_ROOT / "site"

# Airflow's login on every route of this file (app.py requires it router-wide too).
router = APIRouter(prefix="/manual", include_in_schema=False, dependencies=[Depends(get_user)])


@router.get("")
def manual_root() -> RedirectResponse:
    """``/manual`` → ``/manual/``: the site's pages link relative to a folder."""
    return RedirectResponse("manual/", status_code=308)


@router.get("/{path:path}")
def manual_file(path: str) -> FileResponse:
    """A file of the built site; a folder's ``index.html``."""
    found = site_file(SITE, path)
    media_type = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
    return FileResponse(found, media_type=media_type, headers={"Cache-Control": "no-cache"})


def site_file(site: Path, path: str) -> Path:
    """The file of ``site`` that ``path`` names, or ``NotFound``."""
    if not (site / "index.html").is_file():
        raise NotFound("the docs site is not built: run `make docs` (it builds into site/)")
    root = site.resolve()
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        raise NotFound(f"no page {path!r} in the docs site")
    if target.is_dir():
        target = target / "index.html"
    if not target.is_file():
        raise NotFound(f"no page {path!r} in the docs site")
    return target
