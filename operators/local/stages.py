"""The local launcher's stages in a run's DAG: ``stage_data``, ``launch`` (a process per node,
mapped over the node list ``validate`` returns) and ``collect_logs``."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator, TriggerRule

from operators.local.collect_logs import CollectLogsOperator
from operators.local.launch_local import LaunchLocalNodeOperator
from operators.local.stage_data import StageDataOperator


def local_stages(validate: BaseOperator, _archive: BaseOperator) -> tuple[BaseOperator, Any, Any]:
    """stage_data, launch and collect_logs, after ``validate``."""
    stage = StageDataOperator(task_id="stage_data")
    launch = LaunchLocalNodeOperator.partial(
        task_id="launch", map_index_template="{{ task.node_index }}"
    ).expand(node_index=validate.output)
    collect = CollectLogsOperator(task_id="collect_logs", trigger_rule=TriggerRule.ALL_DONE)
    return stage, launch, collect
