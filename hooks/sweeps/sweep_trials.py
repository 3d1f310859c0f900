"""What a sweep's driver does to runs, for real: trigger a trial through Airflow's REST API (as
``octotrain task run`` does, with the trial's own run id, so a repeated trigger finds the run
the first one made), read a trial's objective among its files where its launcher keeps them,
and raise a trial's abort flag (a pruning or a stop) with a note on its DAG run in Airflow.

The driver runs in an Airflow worker, which Airflow 3 keeps away from its metadata DB: the REST
API is how a task starts another DAG's run. Its user is Octotrain's Airflow user
(``OCTOTRAIN_AIRFLOW_USERNAME``/``_PASSWORD``; the embedded default's is generated), who must
be allowed to trigger the tasks' DAGs.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from typing import Any

from hooks.airflow.airflow_rest import AirflowApiError, AirflowRestClient
from hooks.launchers import metrics_of
from hooks.run_stops import raise_stop_flag
from hooks.runs.run_metrics import first_node
from octotrain.abort_flags import AbortFlag, pruned_note, stop_note
from octotrain.catalog.models import Run
from octotrain.contracts import dag_id_for
from octotrain.errors import NotFound
from octotrain.settings import get_settings
from octotrain.sweep_spec import Objective

log = logging.getLogger(__name__)


class RestTrials:
    """Trials started and noted through Airflow's REST API, logged in once."""

    def __init__(self) -> None:
        self._client: AirflowRestClient | None = None

    @property
    def client(self) -> AirflowRestClient:
        if self._client is None:
            self._client = AirflowRestClient.from_settings(get_settings())
        return self._client

    def start(self, *, task_id: int, airflow_run_id: str, conf: dict[str, Any]) -> None:
        self.client.trigger(dag_id_for(task_id), conf, run_id=airflow_run_id)

    def stop(self, run: Run, flag: AbortFlag) -> None:
        """Raise the flag; the note on the DAG run says what stopped it (best effort: the
        stop holds whether or not Airflow could be told)."""
        if flag.pruned:
            note = pruned_note(flag)
        else:
            at = datetime.fromisoformat(flag.at) if flag.at else datetime.now(UTC)
            note = stop_note(user=flag.reason.removeprefix("stopped by "), at=at)
        stop = raise_stop_flag(run, flag, note=note)
        if stop.note is None:
            return
        try:
            self.client.add_run_note(dag_id_for(run.task_id), run.airflow_run_id, note=stop.note)
        except AirflowApiError as error:
            log.warning("could not note run %s in Airflow: %s", run.airflow_run_id, error)


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
