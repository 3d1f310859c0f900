"""The Kubernetes launcher's stages in a run's DAG: ``stage_data``, ``launch`` (a pod per node,
mapped over the node list ``validate`` returns), ``collect_logs``, and the teardown that
deletes the run's Service whatever happens."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator, TriggerRule


def pod_stages(validate: BaseOperator, archive: BaseOperator) -> tuple[BaseOperator, Any, Any]:
    """stage_data, launch and collect_logs after ``validate``, and ``delete_service`` after
    ``archive``.

    The operators are imported here, not at the top: the cncf.kubernetes provider and the
    kubernetes clients take about 2 s to import, which every task process of the local launcher
    would otherwise pay when it parses the DAG file (bench.trigger measures it).
    """
    from operators.kubernetes.collect_pod_logs import CollectPodLogsOperator
    from operators.kubernetes.delete_service import DeleteRunServiceOperator
    from operators.kubernetes.launch_pod import LaunchNodePodOperator
    from operators.kubernetes.prepare_pods import PreparePodsOperator

    stage = PreparePodsOperator(task_id="stage_data")
    launch = LaunchNodePodOperator.partial(
        task_id="launch", map_index_template="{{ task.node_index }}"
    ).expand(node_index=validate.output)
    collect = CollectPodLogsOperator(task_id="collect_logs", trigger_rule=TriggerRule.ALL_DONE)
    teardown = DeleteRunServiceOperator(task_id="delete_service").as_teardown(setups=stage)
    [collect, archive] >> teardown
    return stage, launch, collect
