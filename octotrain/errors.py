"""Errors that carry every problem at once, each with the field it concerns and the rule."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldProblem:
    """One broken rule: ``field`` is a dotted path into the task document."""

    field: str
    rule: str

    def __str__(self) -> str:
        return f"{self.field}: {self.rule}"


class TaskDefinitionError(ValueError):
    """A task document or its references break one or more rules; nothing was written."""

    def __init__(self, problems: list[FieldProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(problem) for problem in problems))
