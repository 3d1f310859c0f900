"""The launchers' record of when a node held its resources (``octotrain.catalog.node_holds``),
which usage accounting bills.

Recording is no part of the training: a catalog that cannot be written is logged as a warning
and the node goes on (usage then shows fewer nodes recorded than the run had), rather than a
training failing for its bill.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from hooks.storage.catalog import default_catalog
from octotrain.catalog.node_holds import record_hold, record_release
from octotrain.planning import RunPlan

if TYPE_CHECKING:  # the local launcher does without the Kubernetes client's import
    from kubernetes.client import models as k8s

log = logging.getLogger(__name__)


def record_node_hold(
    plan: RunPlan, node_index: str, *, started_at: datetime, ended_at: datetime | None = None
) -> None:
    """Node ``node_index`` of the run held its resources from ``started_at`` (to ``ended_at``,
    None while it still does)."""
    if not plan.catalog_run_id:
        return
    try:
        with default_catalog().session() as session:
            record_hold(
                session,
                run_id=plan.catalog_run_id,
                node_index=node_index,
                started_at=started_at,
                ended_at=ended_at,
            )
    except Exception:
        log.warning("could not record node %s's hold for usage", node_index, exc_info=True)


def record_node_release(plan: RunPlan, node_index: str) -> None:
    """Node ``node_index`` released its resources now (nothing when it never held any)."""
    if not plan.catalog_run_id:
        return
    try:
        with default_catalog().session() as session:
            record_release(
                session,
                run_id=plan.catalog_run_id,
                node_index=node_index,
                ended_at=datetime.now(UTC),
            )
    except Exception:
        log.warning("could not record node %s's release for usage", node_index, exc_info=True)


def pod_held_span(pod: k8s.V1Pod) -> tuple[datetime, datetime] | None:
    """When ``pod`` held its resources: from its start on a Kubernetes node (the kubelet
    acknowledged it: its requests are reserved there, image pulls and init containers
    included) to the end of its last container (now, for one that has not ended); None for a
    pod that never reached a node."""
    status = pod.status
    if status is None or status.start_time is None:
        return None
    ends = [
        container.state.terminated.finished_at
        for container in [
            *(status.init_container_statuses or []),
            *(status.container_statuses or []),
        ]
        if container.state is not None
        and container.state.terminated is not None
        and container.state.terminated.finished_at is not None
    ]
    running = any(
        container.state is not None and container.state.terminated is None
        for container in status.container_statuses or []
    )
    end = datetime.now(UTC) if running or not ends else max(ends)
    return status.start_time, end
