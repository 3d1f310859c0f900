"""The Kubernetes launcher: a pod per node (``operators/kubernetes/launch_pod.py``), the run's files
in the object store (the pods' sidecars upload them), the nodes meeting through the run's
headless Service."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from hooks.runs.model_archive import NoModelWritten, archive_stored_outputs, stored_outputs
from hooks.runs.run_files import StoreRunFiles
from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from octotrain.admission import Demand, QueueState
from octotrain.catalog.models import ModelVersion, Run
from octotrain.errors import InvalidInput
from octotrain.kubernetes_config import kubernetes_config
from octotrain.metrics import final_values
from octotrain.mount_volumes import mount_volumes
from octotrain.planning import RunPlan
from octotrain.pods import master_address, runs_as_root
from octotrain.run_layout import RunLayout, RunObjects
from octotrain.settings import get_settings

log = logging.getLogger(__name__)


class PodLauncher:
    def rendezvous(self, plan: RunPlan) -> tuple[str, int]:
        """Node 0's pod by its DNS name under the run's Service, on the configured port."""
        check_mount_volume(plan)
        check_pod_security(plan)
        return master_address(plan, get_settings().kubernetes_namespace), (
            kubernetes_config().master_port
        )

    def run_files(self, layout: RunLayout, *, live: bool = True) -> StoreRunFiles:
        """The object store, live or not: the pods and the tasks that follow them share no
        disk (a pod's sidecar uploads its node's files as they are written)."""
        return pod_run_files(layout.objects)

    def queue_state(self, run: Run) -> QueueState | None:
        """Kueue's Workload of the run's pods; None when it could not be read (the page then
        shows the run without its place, and the log why)."""
        # Imported here: the Kubernetes client costs 2 s to import, which only this needs.
        from hooks.kubernetes.kueue_workloads import workload_queue_state

        try:
            return workload_queue_state(run)
        except Exception:
            log.warning("could not read run %s's Kueue Workload", run.id, exc_info=True)
            return None

    def concurrency_refusal(self, project: str, demand: Demand, runs: int) -> str | None:
        """With Kueue, the ClusterQueue behind the project's LocalQueue must be able to hold
        ``runs`` runs' nodes at once (their cores and memory; a pod's sidecar asks a little
        more, which Kueue itself judges); without a queue there is no quota to judge."""
        config = kubernetes_config()
        if config.admission != "kueue":
            return None
        # Imported here: the Kubernetes client costs 2 s to import, which only this needs.
        from hooks.kubernetes.kubernetes_access import LauncherAccessError, check_kueue_queue
        from hooks.kubernetes.kubernetes_runs import KubernetesRuns

        settings = get_settings()
        runs_api = KubernetesRuns(
            conn_id=settings.kubernetes_conn_id, namespace=settings.kubernetes_namespace
        )
        asked = {"cpu": demand.cores * runs, "memory": float(demand.memory_mib * runs << 20)}
        try:
            check_kueue_queue(
                runs_api, queue=config.kueue.queue_of(project), project=project, asked=asked
            )
        except LauncherAccessError as error:
            return f"{runs} runs at once: {error}"
        return None

    def archive(self, plan: RunPlan, layout: RunLayout) -> ModelVersion:
        """The pods' sidecars uploaded each node's OUTPUT and metrics."""
        store = default_object_store()
        outputs = stored_outputs(store, plan)
        if not outputs:
            raise NoModelWritten()
        with tempfile.TemporaryDirectory(prefix="octotrain-metrics-") as scratch:
            prefix = plan.objects.metrics(plan.node_indices[0])
            for info in store.list(prefix):
                store.get_file(info.key, Path(scratch) / info.key[len(prefix) + 1 :])
            metrics = final_values(Path(scratch))
        lineage = plan.lineage | {"metrics": metrics}
        return archive_stored_outputs(default_catalog(), store, plan, outputs, lineage)


def pod_run_files(objects: RunObjects) -> StoreRunFiles:
    """A pod run's files: in the object store, for its pods, its stages and its pages."""
    return StoreRunFiles(default_object_store(), objects)


def check_mount_volume(plan: RunPlan) -> None:
    """On Kubernetes, resource mounts come from the volume the resource spec names."""
    if not plan.mounts or plan.resources is None:
        return
    volume, known = plan.resources.mount_volume, mount_volumes()
    if not volume:
        raise InvalidInput.one(
            "resource_spec",
            f"'{plan.resources.spec}' names no mount_volume, so the task's mounts cannot be "
            "mounted on Kubernetes (set one of config/mount_volumes.toml on the spec)",
        )
    if volume not in known:
        raise InvalidInput.one(
            "resource_spec",
            f"mount_volume '{volume}' of '{plan.resources.spec}' is not in "
            f"config/mount_volumes.toml (it has: {', '.join(sorted(known)) or 'none'})",
        )


def check_pod_security(plan: RunPlan) -> None:
    """A task that runs as root cannot meet the ``restricted`` Pod Security profile: refused
    here, when the run is validated, rather than by the API server when its pods are made."""
    config = kubernetes_config()
    if runs_as_root(plan) and config.pod_security == "restricted":
        namespace = get_settings().kubernetes_namespace
        raise InvalidInput.one(
            "run_as_uid",
            f"0 (root) breaks the restricted Pod Security profile of namespace '{namespace}' "
            "(pod_security in config/kubernetes.toml): run the task as another uid, or declare "
            "the namespace baseline",
        )
