"""The door to a run's place in its queue, whatever admits it: the configured launcher says
(this machine's admission rule, or Kueue on the cluster). Every surface that says why a run
waits reads it here."""

from __future__ import annotations

from hooks.launchers import configured_launcher
from octotrain.admission import QueueState
from octotrain.catalog.models import Run


def queue_state(run: Run) -> QueueState | None:
    """The run's queue, position, ask and reason (None: it asked nothing of a queue, or the
    cluster could not be read)."""
    return configured_launcher().queue_state(run)
