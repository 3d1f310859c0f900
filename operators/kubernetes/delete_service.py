"""``delete_service``: the teardown of a Kubernetes run. It deletes the run's NetworkPolicy, its
Secret (a run with secrets), its Volcano PodGroup (admission = "volcano") or Kueue Workload
(admission = "kueue": Kueue keeps the finalizer of a group's pods deleted while they waited
until their Workload goes) and its headless Service (distributed runs) whatever happened to
the run, so that none outlives its pods."""

from __future__ import annotations

from airflow.sdk import Context

from hooks.kubernetes.kubernetes_runs import KubernetesRuns
from octotrain.kubernetes_config import kubernetes_config
from octotrain.network_policy import network_policy_name
from octotrain.pods import pod_group_name, secret_name, service_name
from octotrain.settings import get_settings
from operators.training_stage import TrainingStageOperator


class DeleteRunServiceOperator(TrainingStageOperator):
    ui_color = "#f3eefa"

    def execute(self, context: Context) -> bool:
        """True when the run's Service was there to delete."""
        plan = self.run_plan(context)
        settings = get_settings()
        runs = KubernetesRuns(
            conn_id=settings.kubernetes_conn_id, namespace=settings.kubernetes_namespace
        )
        policy = network_policy_name(plan)
        gone = runs.delete_network_policy(policy)
        self.log.info("network policy %s %s", policy, "deleted" if gone else "was gone")
        if plan.has_secrets:
            secret = secret_name(plan)
            gone = runs.delete_secret(secret)
            self.log.info("secret %s %s", secret, "deleted" if gone else "was gone")
        admission, group = kubernetes_config().admission, pod_group_name(plan.task_id, plan.run_key)
        if admission == "volcano":
            gone = runs.delete_pod_group(group)
            self.log.info("Volcano PodGroup %s %s", group, "deleted" if gone else "was gone")
        if admission == "kueue":  # a run that ends waiting: Kueue then lets go of its pods
            gone = runs.delete_workload(group)
            self.log.info("Kueue Workload %s %s", group, "deleted" if gone else "was gone")
        if plan.world_size == 1:
            return False
        deleted = runs.delete_service(service_name(plan))
        self.log.info("service %s %s", service_name(plan), "deleted" if deleted else "was gone")
        return deleted
