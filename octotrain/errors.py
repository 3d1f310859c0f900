"""The errors every entry point (REST API, CLI, UI form, the DAG's ``validate``) reports alike.

A request either succeeds whole or fails with one of these, and in every case nothing was
written: the services raise before they commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldProblem:
    """One broken rule: ``field`` is a dotted path into the document, ``rule`` plain words."""

    field: str
    rule: str

    def __str__(self) -> str:
        return f"{self.field}: {self.rule}"


class CatalogError(Exception):
    """Base of the errors below; its message is meant for the user as it is."""


# How many broken rules an answer lists (the rest are counted): a document with 200,000
# undeclared parameters was answered with 40 MB of them.
LISTED_PROBLEMS = 100


class InvalidInput(CatalogError, ValueError):
    """A document or its references break one or more rules, all of them judged at once; the
    first ``LISTED_PROBLEMS`` are listed, the others counted."""

    def __init__(self, problems: Iterable[FieldProblem]) -> None:
        self.problems = list(problems)
        shown = "; ".join(str(problem) for problem in self.listed)
        if self.unlisted:
            shown += f"; and {self.unlisted} more"
        super().__init__(shown)

    @property
    def listed(self) -> list[FieldProblem]:
        return self.problems[:LISTED_PROBLEMS]

    @property
    def unlisted(self) -> int:
        return max(0, len(self.problems) - LISTED_PROBLEMS)

    @classmethod
    def one(cls, field: str, rule: str) -> InvalidInput:
        return cls([FieldProblem(field, rule)])


class InvalidQuery(InvalidInput):
    """A read's parameters break a rule (a search pattern that does not compile): the request
    is malformed (HTTP 400), whereas ``InvalidInput`` judges a document to be saved (422)."""


class InvalidTrigger(InvalidInput):
    """A run's settings (its ``conf``) break a rule: nothing is started. HTTP 400, as Airflow
    answers a conf that fails the DAG's Params."""


class NotFound(CatalogError, LookupError):
    """The object does not exist, or it is in a project the user is not a member of (the two
    are indistinguishable on purpose: another project's objects are not disclosed)."""


class Conflict(CatalogError):
    """The request collides with the catalog's current state (another request took the same
    name or number first, a run is still active); trying again later may succeed."""


class StillReferenced(Conflict):
    """The object cannot be deleted or renamed: ``referrers`` still name it."""

    def __init__(self, what: str, referrers: list[str]) -> None:
        self.referrers = referrers
        super().__init__(f"{what} is still referenced by {', '.join(referrers)}")
