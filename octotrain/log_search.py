"""What a log search asks and answers: a keyword (case-insensitive literal by default, or a
regular expression) over one file, one node or every node of a run, with a few lines of context
around each line found, and a cursor to go on from after the last one."""

from __future__ import annotations

from dataclasses import dataclass, field

from octotrain.errors import FieldProblem, InvalidQuery

MAX_PATTERN_CHARS = 256
MAX_CONTEXT = 10
MAX_HITS = 1000


@dataclass(frozen=True)
class SearchQuery:
    text: str
    regex: bool = False
    case_sensitive: bool = False
    context: int = 2
    limit: int = 100

    def __post_init__(self) -> None:
        problems = []
        if not 1 <= len(self.text) <= MAX_PATTERN_CHARS:
            problems.append(FieldProblem("q", f"must be 1 to {MAX_PATTERN_CHARS} characters"))
        if any(char in self.text for char in "\n\r\x00"):
            problems.append(FieldProblem("q", "must be one line, without NUL"))
        if not 0 <= self.context <= MAX_CONTEXT:
            problems.append(FieldProblem("context", f"must be 0 to {MAX_CONTEXT} lines"))
        if not 1 <= self.limit <= MAX_HITS:
            problems.append(FieldProblem("limit", f"must be 1 to {MAX_HITS} lines found"))
        if problems:
            raise InvalidQuery(problems)


@dataclass(frozen=True)
class SearchCursor:
    """Where a search goes on: in ``file``, from byte ``offset``, which begins line ``line`` + 1."""

    file: str
    offset: int = 0
    line: int = 0


@dataclass(frozen=True)
class SearchHit:
    file: str
    node: str
    line: int  # 1-based
    offset: int  # of the line's first byte
    text: str
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SearchResult:
    hits: list[SearchHit]
    files: list[str]  # searched, in order
    # Set when ``limit`` lines were found: search again from here for the next ones.
    more: SearchCursor | None = None
