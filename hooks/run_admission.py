"""The door to a run's place in its queue, whatever admits it: this machine's admission rule
(``hooks.local_admission``) or Kueue on the cluster (``hooks.kueue_workloads``). Every surface
that says why a run waits reads it here."""

from __future__ import annotations

import logging

from octotrain.admission import QueueState
from octotrain.catalog.models import Run
from octotrain.settings import get_settings

log = logging.getLogger(__name__)


def queue_state(run: Run) -> QueueState | None:
    """The run's queue, position, ask and reason (None: it asked nothing of a queue, or the
    cluster could not be read: the page then shows the run without them, and the log why)."""
    # Imported by the launcher's kind: the Kubernetes client costs a local install 2 s.
    if get_settings().launcher == "local":
        from hooks import local_admission

        return local_admission.queue_state(run.id)
    from hooks.kueue_workloads import workload_queue_state

    try:
        return workload_queue_state(run)
    except Exception:
        log.warning("could not read run %s's Kueue Workload", run.id, exc_info=True)
        return None
