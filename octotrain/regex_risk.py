"""Spotting regular expressions that can backtrack catastrophically, before they run.

Metric definitions are matched against every line a training prints: a pattern whose match
time explodes on an unlucky line would stall the run's charts. Python's ``re`` has no time
limit, so such patterns are refused when saved. The check is the classic "star height" one: a
repeat of variable count (not just optional) inside an unbounded repeat (``(a+)+``, ``(\\w*\\s?)*``,
``(a{1,9})+``) is refused. Possessive repeats (``a++``) and atomic groups (``(?>a+)``) never
give back what they matched, so they end the nesting; fixed counts (``(\\d{3}-)+``) do not
nest.
"""

from __future__ import annotations

import re

# The parser is private, but it is the only way to see a pattern's structure without writing a
# second regex parser; it is the same in CPython 3.11 to 3.13.
from re import _constants as regex_constants  # type: ignore[attr-defined]
from re import _parser as regex_parser  # type: ignore[attr-defined]
from typing import Any

TOO_DEEP = "nests its groups too deeply"
BACKTRACKING_REPEATS = {regex_constants.MAX_REPEAT, regex_constants.MIN_REPEAT}
NESTED_REPEAT_RULE = (
    "repeats a repeat (such as (a+)+), which can backtrack catastrophically on an unlucky "
    "line; make the inner repeat possessive (a++) or atomic ((?>a+)), or give it a fixed count"
)


def compile_error(pattern: str) -> str | None:
    """Why ``pattern`` does not compile, or None (a pattern nested too deeply for Python's
    parser is refused too, rather than failing the request)."""
    try:
        re.compile(pattern)
    except re.error as error:
        return str(error)
    except RecursionError:
        return TOO_DEEP
    return None


def backtracking_risk(pattern: str) -> str | None:
    """Why ``pattern`` (which compiles) could take exponential time, or None."""
    try:
        return _risk(regex_parser.parse(pattern), inside_unbounded=False)
    except RecursionError:
        return TOO_DEEP


def _risk(items: Any, *, inside_unbounded: bool) -> str | None:
    for op, argument in items:
        if op in BACKTRACKING_REPEATS:
            low, high, body = argument
            if inside_unbounded and high > max(low, 1):  # an optional item (a?) is fine
                return NESTED_REPEAT_RULE
            unbounded = inside_unbounded or high == regex_constants.MAXREPEAT
            found = _risk(body, inside_unbounded=unbounded)
        elif op == regex_constants.POSSESSIVE_REPEAT:
            found = _risk(argument[2], inside_unbounded=False)
        elif op == regex_constants.ATOMIC_GROUP:
            found = _risk(argument, inside_unbounded=False)
        else:
            found = _first(
                _risk(part, inside_unbounded=inside_unbounded) for part in _parts(op, argument)
            )
        if found:
            return found
    return None


def _parts(op: Any, argument: Any) -> list[Any]:
    """The sub-patterns of a group, an alternation, a lookaround or a conditional."""
    if op == regex_constants.SUBPATTERN:
        return [argument[-1]]
    if op == regex_constants.BRANCH:
        return list(argument[1])
    if op in (regex_constants.ASSERT, regex_constants.ASSERT_NOT):
        return [argument[1]]
    if op == regex_constants.GROUPREF_EXISTS:
        return [branch for branch in argument[1:] if branch is not None]
    return []


def _first(reasons: Any) -> str | None:
    return next((reason for reason in reasons if reason), None)
