"""``stage_data`` with the Kubernetes launcher: prepare what the pods stage themselves.

First it checks the launcher's access to the cluster (``hooks.kubernetes.kubernetes_access``: the
connection loads and is accepted, and holds every permission the run will use), so that a wrong
kubeconfig or a Role without ``pods/log`` fails the run here, saying so, before anything is
created; with Kueue (``admission = "kueue"``), so does a project whose LocalQueue does not
exist, or a cluster without Kueue. Each pod's init container stages its node's inputs
(``octotrain node stage``); this task looks the inputs up in the catalog as they are now (an
input deleted since ``validate`` fails the run here, named in every node's init log), writes the
run's stage plan to the object store for the init containers, and creates the run's
NetworkPolicy (``octotrain.network_policy``: its pods reach each other, the cluster DNS and the
configured egress, and nothing else reaches them), the headless Service that gives each node of
a distributed run its DNS name, and the Secret of the run's secret variables and parameters,
which its pods read by reference (all deleted by the ``delete_service`` teardown, whatever
happens).
"""

from __future__ import annotations

import time
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException
from kubernetes.client.rest import ApiException

from hooks.kubernetes.kubernetes_access import (
    LauncherAccessError,
    check_kueue_queue,
    check_launcher_access,
)
from hooks.kubernetes.kubernetes_runs import HTTP_NOT_FOUND, KubernetesRuns
from hooks.kubernetes.kueue_quota import run_requests
from hooks.kubernetes.pod_launcher import pod_run_files
from hooks.storage.catalog import default_catalog
from octotrain.contracts import NodeLogNames
from octotrain.input_sources import current_sources
from octotrain.kubernetes_config import kubernetes_config
from octotrain.launcher_permissions import (
    KUEUE_PERMISSIONS,
    LAUNCHER_PERMISSIONS,
    VOLCANO_PERMISSIONS,
)
from octotrain.network_policy import run_network_policy
from octotrain.pods import (
    VOLCANO_API_GROUP,
    headless_service,
    node_pod,
    run_secret,
    volcano_pod_group,
)
from octotrain.run_layout import RunObjects
from octotrain.settings import get_settings
from octotrain.stage_plans import StagePlan
from operators.kubernetes.pod_settings import pod_settings
from operators.training_stage import TrainingStageOperator, with_real_secrets


class PreparePodsOperator(TrainingStageOperator):
    ui_color = "#eef7ea"

    def execute(self, context: Context) -> str:
        plan = self.run_plan(context)
        settings = get_settings()
        runs = KubernetesRuns(
            conn_id=settings.kubernetes_conn_id, namespace=settings.kubernetes_namespace
        )
        config = kubernetes_config()
        queued = config.admission == "kueue"
        extra = {"kueue": KUEUE_PERMISSIONS, "volcano": VOLCANO_PERMISSIONS}
        try:
            check_launcher_access(
                runs, conn_id=settings.kubernetes_conn_id,
                permissions=LAUNCHER_PERMISSIONS + extra.get(config.admission, ()),
            )  # fmt: skip
            if queued:
                queue = config.kueue.queue_of(plan.project)
                pods = [node_pod(plan, node, pod_settings(plan.resources.spec))
                        for node in plan.node_indices]  # fmt: skip
                check_kueue_queue(runs, queue=queue, project=plan.project,
                                  asked=run_requests(pods))  # fmt: skip
        except LauncherAccessError as error:
            raise AirflowFailException(str(error)) from None
        objects = plan.objects
        with default_catalog().session() as session:
            data, gone_data = current_sources(session, plan.data_inputs)
            models, gone_models = current_sources(session, plan.input_models)
            _, gone_mounts = current_sources(session, plan.mounts)
            code, gone_code = current_sources(session, [plan.code] if plan.code else [])
        gone = gone_data + gone_models + gone_mounts + gone_code
        if gone:
            for node_index in plan.node_indices:
                _write_init_log(objects, node_index, gone)
            raise AirflowFailException("staging failed: " + "; ".join(gone))
        stage_plan = StagePlan.of(data, models, checkpoint_sources=plan.checkpoint_sources,
                                  code=code[0] if code else None)  # fmt: skip
        pod_run_files(objects).write(objects.stage_plan, stage_plan.model_dump_json().encode())
        policy = run_network_policy(plan, settings.kubernetes_namespace, config)
        runs.ensure_network_policy(policy)
        self.log.info("network policy %s", policy["metadata"]["name"])
        if plan.has_secrets:
            secret = run_secret(with_real_secrets(plan), settings.kubernetes_namespace)
            runs.ensure_secret(secret)
            self.log.info("secret %s (%d values)", secret["metadata"]["name"],
                          len(secret["stringData"]))  # fmt: skip
        if config.admission == "volcano":
            group = volcano_pod_group(plan, config, settings.kubernetes_namespace)
            make_pod_group(runs, group)
            self.log.info("Volcano PodGroup %s of %d pods", group["metadata"]["name"],
                          plan.world_size)  # fmt: skip
        if plan.world_size > 1:
            service = headless_service(plan, settings.kubernetes_namespace, config.master_port)
            runs.ensure_service(service)
            self.log.info("headless service %s for %d nodes", service["metadata"]["name"],
                          plan.world_size)  # fmt: skip
        return objects.stage_plan


def make_pod_group(runs: KubernetesRuns, group: dict[str, Any]) -> None:
    """The run's PodGroup made; a cluster without Volcano's CRD fails the run, saying so."""
    try:
        runs.ensure_pod_group(group)
    except ApiException as error:
        if error.status != HTTP_NOT_FOUND:
            raise
        raise AirflowFailException(
            f"Volcano is not installed in the cluster (it has no PodGroup kind: the CRD "
            f"podgroups.{VOLCANO_API_GROUP} is missing), but config/kubernetes.toml says "
            'admission = "volcano"; install Volcano, or set admission = "" there'
        ) from None


def _write_init_log(objects: RunObjects, node_index: str, problems: list[str]) -> None:
    name = NodeLogNames(task_id=objects.task_id, node_index=node_index).init
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    text = "".join(f"{stamp} ERROR {problem}\n" for problem in problems)
    pod_run_files(objects).write(objects.log(name), text.encode("utf-8"))
