"""What a sweep's driver does to runs, for real: trigger a trial from its own Airflow task (with
the trial's own run id, so a repeated trigger finds the run the first one made), read a trial's
objective among its files where its launcher keeps them, and raise a trial's abort flag (a
pruning or a stop).

The driver runs in an Airflow worker, which Airflow 3 keeps away from its metadata DB: it starts
runs the way Airflow's ``TriggerDagRunOperator`` does, through the task's supervisor.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from hooks.airflow.airflow_compat import trigger_from_task
from hooks.launchers import metrics_of
from hooks.run_stops import raise_stop_flag
from hooks.runs.run_metrics import first_node
from octotrain.abort_flags import AbortFlag
from octotrain.catalog.models import Run
from octotrain.contracts import dag_id_for
from octotrain.errors import NotFound
from octotrain.sweep_spec import Objective

log = logging.getLogger(__name__)


class TaskTrials:
    """Trials started from the driver's own task, as Airflow's ``TriggerDagRunOperator``
    starts runs (no user's credentials: the task's supervisor asks Airflow), each run noted as
    the sweep's trial in Airflow's grid."""

    def __init__(self, sweep_name: str) -> None:
        self.sweep_name = sweep_name

    def start(self, *, task_id: int, airflow_run_id: str, conf: dict[str, Any]) -> None:
        number = airflow_run_id.rsplit("-", 1)[-1]
        note = f"Trial {number} of sweep **{self.sweep_name}** (Octotrain)."
        created = trigger_from_task(
            dag_id=dag_id_for(task_id), run_id=airflow_run_id, conf=conf, note=note
        )
        if not created:
            log.info("run %s was started before (a driver started again)", airflow_run_id)

    def stop(self, run: Run, flag: AbortFlag) -> None:
        """Raise the flag: the run's nodes stop within the grace period and it ends pruned (or
        stopped); its launch tasks say why in their logs."""
        raise_stop_flag(run, flag)


def objective_points(run: Run, objective: Objective) -> list[tuple[float, float]]:
    """The objective's line of node 0's chart so far, as (x, value); none before the chart is
    declared."""
    reader = metrics_of(run)
    if not reader.nodes:
        return []
    try:
        columns = reader.chart(first_node(reader), objective.chart)
    except NotFound:
        return []
    line = columns.lines.get(objective.series)
    if line is None:
        return []
    return [
        (float(x), float(y))
        for x, y in zip(columns.x, line, strict=True)
        if math.isfinite(x) and math.isfinite(y)
    ]
