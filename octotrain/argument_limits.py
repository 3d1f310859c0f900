"""What may reach a training process through ``execve``: its command line (the algorithm's
command and ``--name=value`` parameters) and its environment (the algorithm's variables).

The kernel refuses a NUL byte in any argument or variable, a single string over 128 KiB
(``MAX_ARG_STRLEN``) and a whole command line plus environment over ``ARG_MAX`` (a quarter of
the stack limit: 2 MiB by default). A node refused there starts nothing and leaves empty logs,
so these limits are judged where a value is written (saving an algorithm or a task, checking
one, a run's conf through Octotrain or Airflow's own trigger) and again by ``validate``, with
the same words everywhere. They are spelled once here; the DAG's Params carry them as JSON
schema (``text_value_schema``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from octotrain.errors import FieldProblem

# The platform-wide cap on a string parameter's or an environment value's length, in
# characters; an algorithm may declare a lower ``max_length`` for a string parameter. At most
# 4 bytes each in UTF-8, so one value stays far below the kernel's 128 KiB per argument.
MAX_TEXT_VALUE_LENGTH = 8192
# Control characters (C0 and DEL): NUL cannot cross ``execve``, and the others are never
# meant in a parameter or a variable (a pasted newline or escape sequence).
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
# The same as JSON schema: no control character anywhere (``$`` would let a final newline
# through in Python's dialect, so a look-ahead from the start, valid in JavaScript too).
TEXT_VALUE_PATTERN = "^(?![\\s\\S]*[\\x00-\\x1f\\x7f])"
# The command line plus environment a task may fill: half of Linux's usual ``ARG_MAX``
# (2 MiB), leaving the rest to the variables the platform and the image set.
LAUNCH_BUDGET_BYTES = 1024 * 1024
# What ``execve`` counts for each string besides its bytes: the terminating NUL and the
# pointer to it.
PER_STRING_OVERHEAD = 1 + 8


def text_value_problem(value: str, max_length: int | None = None) -> str | None:
    """Why ``value`` cannot be a string parameter or a variable's value, or None if it can.

    ``max_length`` is the algorithm's own limit, if it declares one (never above the cap)."""
    limit = min(max_length or MAX_TEXT_VALUE_LENGTH, MAX_TEXT_VALUE_LENGTH)
    if len(value) > limit:
        return f"must be at most {limit} characters, got {len(value)}"
    found = CONTROL_CHARACTERS.search(value)
    if found is not None:
        return (
            "must not contain control characters (U+0000-U+001F, U+007F); "
            f"found U+{ord(found.group()):04X} at position {found.start()}"
        )
    return None


def text_value_schema(max_length: int | None = None) -> dict[str, object]:
    """The same rule as JSON schema keywords, for the DAG's Params (Airflow's trigger)."""
    limit = min(max_length or MAX_TEXT_VALUE_LENGTH, MAX_TEXT_VALUE_LENGTH)
    return {"maxLength": limit, "pattern": TEXT_VALUE_PATTERN}


def launch_size_problem(
    command: Iterable[str], arguments: Mapping[str, str], env: Mapping[str, str]
) -> FieldProblem | None:
    """Whether the command, the parameters' arguments (``field → --name=value``) and the
    variables together fit ``LAUNCH_BUDGET_BYTES``; if not, the problem names the biggest item.
    """
    sizes = {f"command.{position}": part for position, part in enumerate(command)}
    sizes |= dict(arguments)
    sizes |= {f"env.{name}": f"{name}={value}" for name, value in env.items()}
    counted = {field: len(text.encode()) + PER_STRING_OVERHEAD for field, text in sizes.items()}
    total = sum(counted.values())
    if total <= LAUNCH_BUDGET_BYTES:
        return None
    biggest = max(counted, key=lambda field: counted[field])
    return FieldProblem(
        biggest,
        f"the command line and environment would take {_kib(total)}, more than the "
        f"{_kib(LAUNCH_BUDGET_BYTES)} a training process may start with (the kernel's ARG_MAX); "
        f"the biggest item is {biggest} ({_kib(counted[biggest])})",
    )


def _kib(size: int) -> str:
    return f"{size / 1024:,.0f} KiB"
