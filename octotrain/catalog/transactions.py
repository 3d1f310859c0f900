"""Object-store side effects tied to the outcome of the catalog transaction.

A catalog row and the objects it points to must appear and disappear together, but the object
store takes no part in the database transaction. So objects written for a new row are removed
if the transaction rolls back (``on_rollback``), and objects of a deleted row are removed only
once its deletion is committed (``on_commit``): whatever fails, no row points to missing
objects and no failed request leaves files behind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import event
from sqlalchemy.orm import Session

log = logging.getLogger(__name__)
_COMMIT_ACTIONS = "octotrain.on_commit"
_ROLLBACK_ACTIONS = "octotrain.on_rollback"


def on_commit(session: Session, action: Callable[[], object]) -> None:
    """Run ``action`` after ``session`` commits; drop it if the session rolls back."""
    _pending(session, _COMMIT_ACTIONS).append(action)


def on_rollback(session: Session, action: Callable[[], object]) -> None:
    """Run ``action`` if ``session`` rolls back; drop it once the session commits."""
    _pending(session, _ROLLBACK_ACTIONS).append(action)


def _pending(session: Session, key: str) -> list[Callable[[], object]]:
    if _COMMIT_ACTIONS not in session.info:
        session.info[_COMMIT_ACTIONS] = []
        session.info[_ROLLBACK_ACTIONS] = []
        event.listen(session, "after_commit", _committed)
        event.listen(session, "after_soft_rollback", _rolled_back)
    return session.info[key]


def _committed(session: Session) -> None:
    session.info[_ROLLBACK_ACTIONS].clear()
    _run(session.info[_COMMIT_ACTIONS])


def _rolled_back(session: Session, _previous_transaction: object) -> None:
    session.info[_COMMIT_ACTIONS].clear()
    _run(session.info[_ROLLBACK_ACTIONS])


def _run(actions: list[Callable[[], object]]) -> None:
    # The transaction's outcome is decided; a failing cleanup must not turn it into an error
    # (the rows are right either way), so it is logged and the next action still runs.
    while actions:
        action = actions.pop(0)
        try:
            action()
        except Exception:
            log.exception("object-store cleanup after the catalog transaction failed")
