"""Paged lists of the REST API, shaped as Airflow's own: ``?limit=&offset=`` choose the window
(``limit`` 1-1000, 50 by default; ``offset`` from 0), and the answer is
``{"<collection>": [...], "total_entries": N}``, N counting the whole list."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Query
from pydantic import BaseModel, create_model

from octotrain.catalog.paging import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET, Window


def _window(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="items in the page")] = (
        DEFAULT_LIMIT
    ),
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="items before the page")] = 0,
) -> Window:
    return Window(limit=limit, offset=offset)


CurrentWindow = Annotated[Window, Depends(_window)]


def collection_of(name: str, view: type[BaseModel]) -> type[BaseModel]:
    """The answer model of a paged list of ``view`` under the key ``name``."""
    model_name = "".join(part.title() for part in name.split("_")) + "Collection"
    fields: dict[str, Any] = {name: (list[view], ...), "total_entries": (int, ...)}
    return create_model(model_name, **fields)
