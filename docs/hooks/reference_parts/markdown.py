"""Markdown for the generated parts: text kept inside a table cell, code spans, JSON values."""

from __future__ import annotations

import json
import re
from typing import Any


def cell(text: str) -> str:
    """Text that stays inside one table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def prose_cell(text: str) -> str:
    """Text that stays inside one table cell, a ``<placeholder>`` outside code spans shown as
    written (Markdown would pass it on as an HTML tag, which the browser hides)."""
    pieces = re.split(r"(`+[^`]*`+)", cell(text))
    return "".join(
        piece if piece.startswith("`") else piece.replace("<", "&lt;") for piece in pieces
    )


def code(text: str) -> str:
    """``text`` as a code span, whatever backticks it holds (pipes stay: a table's cell
    ends at a pipe outside a code span only)."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def json_text(value: Any) -> str:
    """``value`` as JSON spells it, its non-ASCII characters as they are."""
    return json.dumps(value, ensure_ascii=False)
