"""How the ``octotrain`` command reads documents and prints results and errors.

Results are views (``octotrain.catalog.views``): ``--json`` prints them as JSON (what the REST
API answers), otherwise a table for lists and YAML for one object. Every refusal is printed
with each broken rule on its own line, and the command exits with status 1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from pydantic import BaseModel
from rich.cells import cell_len
from sqlalchemy.exc import DBAPIError

from hooks.airflow.airflow_api_error import AirflowApiError
from octotrain.errors import (
    LISTED_PROBLEMS,
    CatalogError,
    FieldProblem,
    InvalidInput,
    InvalidQuery,
    InvalidTrigger,
    StillReferenced,
)
from octotrain.storage import ObjectStoreError

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON, as the REST API answers.")]
ProjectOption = Annotated[str, typer.Option("--project", "-p", help="The project.")]
FileOption = Annotated[
    Path,
    typer.Option("--file", "-f", help="YAML or JSON document ('-' for standard input)."),
]
FAILED = 1


class DocumentFileError(ValueError):
    """The document file cannot be read or parsed."""


def load_document(path: Path) -> Any:
    """A YAML or JSON document (JSON is YAML) from ``path`` or, for ``-``, standard input."""
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except OSError as error:
        raise DocumentFileError(f"cannot read {path}: {error.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DocumentFileError(f"{path} is not valid YAML or JSON: {error}") from None


def _plain(item: BaseModel | dict[str, Any]) -> dict[str, Any]:
    return item.model_dump(mode="json") if isinstance(item, BaseModel) else item


def show(item: BaseModel | dict[str, Any], *, as_json: bool) -> None:
    """One object: JSON, or YAML for people."""
    data = _plain(item)
    if as_json:
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        typer.echo(yaml.safe_dump(data, allow_unicode=True, sort_keys=False).rstrip())


def show_list(
    items: Sequence[BaseModel | dict[str, Any]],
    columns: Sequence[str],
    *,
    as_json: bool,
    title: str = "",
) -> None:
    """Several objects: JSON, or a table of ``columns`` for people."""
    rows = [_plain(item) for item in items]
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    lines = [[column.upper().replace("_", " ") for column in columns]]
    lines += [[_cell(row.get(column)) for column in columns] for row in rows]
    if title:
        typer.echo(title)
    typer.echo(aligned(lines))


def aligned(lines: list[list[str]]) -> str:
    """Rows in columns as ``kubectl get`` prints them: each column as wide as its widest cell
    (CJK characters count two), three spaces between, nothing cut, whatever the terminal's
    width. A table widget laid 1,000 rows out in over a second."""
    widths = [max(cell_len(line[index]) for line in lines) for index in range(len(lines[0]))]
    return "\n".join(
        "   ".join(
            cell + " " * (width - cell_len(cell)) for cell, width in zip(line, widths, strict=True)
        ).rstrip()
        for line in lines
    )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ", ".join(f"{key}={_cell(inner)}" for key, inner in value.items())
    if isinstance(value, list):
        return ", ".join(_cell(inner) for inner in value)
    return str(value)


@contextmanager
def reported(*, as_json: bool = False) -> Iterator[None]:
    """Turn the platform's errors into a message (or a JSON error) and exit status 1."""
    try:
        yield
    except InvalidInput as error:
        _refuse(as_json, "invalid", str(error), problems=error.problems,
                consequence=_consequence(error))  # fmt: skip
    except StillReferenced as error:
        _refuse(as_json, "still referenced", str(error), referrers=error.referrers)
    except CatalogError as error:
        _refuse(as_json, "refused", str(error))
    except (ObjectStoreError, AirflowApiError, DocumentFileError, TimeoutError) as error:
        _refuse(as_json, "failed", str(error))
    except DBAPIError as error:
        _refuse(
            as_json,
            "failed",
            f"the catalog database failed: {error.orig}; if it was never set up, run "
            "`octotrain init`",
        )


def _consequence(error: InvalidInput) -> str:
    """What a refusal means: a read changed nothing, a refused run was not started."""
    if isinstance(error, InvalidQuery):
        return "nothing was read"
    if isinstance(error, InvalidTrigger):
        return "nothing was started"
    return "nothing was saved"


def _refuse(as_json: bool, kind: str, detail: str, **extra: Any) -> None:
    problems: list[FieldProblem] | None = extra.pop("problems", None)
    consequence = extra.pop("consequence", "")
    if as_json:
        body: dict[str, Any] = {"error": kind, "detail": detail, **extra}
        if problems is not None:
            body["problems"] = [{"field": p.field, "rule": p.rule} for p in problems]
        typer.echo(json.dumps(body, ensure_ascii=False, indent=2))
    elif problems is not None:
        typer.echo(f"error: {len(problems)} rule(s) broken, {consequence}:", err=True)
        for problem in problems[:LISTED_PROBLEMS]:
            typer.echo(f"  {problem.field}: {problem.rule}", err=True)
        if len(problems) > LISTED_PROBLEMS:
            typer.echo(f"  and {len(problems) - LISTED_PROBLEMS} more", err=True)
    else:
        typer.echo(f"error: {detail}", err=True)
    raise typer.Exit(FAILED)
