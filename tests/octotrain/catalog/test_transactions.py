"""Object-store side effects follow the catalog transaction: on commit, or on rollback."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from hooks.storage.catalog import CatalogHook
from octotrain.catalog.transactions import on_commit, on_rollback


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_actions_run_on_the_outcome_they_wait_for(catalog: CatalogHook) -> None:
    ran: list[str] = []
    with catalog.session() as session:
        on_commit(session, lambda: ran.append("commit"))
        on_rollback(session, lambda: ran.append("rollback"))
    assert ran == ["commit"]
    ran.clear()
    with pytest.raises(KeyError), catalog.session() as session:
        session.execute(text("SELECT 1"))  # a transaction has begun, as with every service
        on_commit(session, lambda: ran.append("commit"))
        on_rollback(session, lambda: ran.append("rollback"))
        raise KeyError("request failed")
    assert ran == ["rollback"]


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_a_failing_cleanup_is_logged_and_the_next_still_runs(
    catalog: CatalogHook, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[str] = []

    def broken() -> None:
        raise OSError("store down")

    with catalog.session() as session:
        on_commit(session, broken)
        on_commit(session, lambda: ran.append("second"))
    assert ran == ["second"]
    assert "cleanup after the catalog transaction failed" in caplog.text
