"""The sweeps' DAG's one stage: drive a sweep until it ends (``hooks/sweeps/sweep_driver.py``).

It holds a worker slot for the sweep's life, polling its trials twice a second: the pruning
decision must follow a trial's reported step within seconds, which a deferral's round trip
through the triggerer would not give. A worker or scheduler that dies takes the driver with it:
Airflow fails the task instance when its heartbeat stops and tries it again (``retries``), and
the new driver carries on from the catalog and the study, starting no trial twice.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from hooks.storage.catalog import default_catalog
from hooks.sweeps.sweep_driver import SweepDriver
from hooks.sweeps.sweep_trials import TaskTrials, objective_points
from octotrain.catalog.access import Scope
from octotrain.catalog.models import Sweep, SweepState
from octotrain.sweeps import ENDED_SWEEP_STATES, Sweeps

DRIVER = Scope.administrator("octotrain-sweeps")


class DriveSweepOperator(BaseOperator):
    ui_color = "#f3eefa"

    def execute(self, context: Context) -> dict[str, Any]:
        sweep_id = int(context["params"]["sweep_id"])
        catalog = default_catalog()
        with catalog.session() as session:
            sweep = session.get(Sweep, sweep_id)
            if sweep is None:
                raise AirflowFailException(f"sweep {sweep_id} does not exist")
            if sweep.state == SweepState.CREATED:  # triggered in Airflow, not through Octotrain
                Sweeps(session, DRIVER).start(sweep_id, airflow_run_id=context["run_id"])
            elif (
                sweep.state not in ENDED_SWEEP_STATES and sweep.airflow_run_id != context["run_id"]
            ):
                raise AirflowFailException(
                    f"sweep {sweep_id} is driven by run {sweep.airflow_run_id} of this DAG: a "
                    "sweep has one driver"
                )
            trials = TaskTrials(sweep.name)
        driver = SweepDriver(
            sweep_id,
            catalog=catalog,
            start_trial=trials.start,
            read_objective=objective_points,
            stop_run=trials.stop,
        )
        state = driver.run()
        with catalog.session() as session:
            sweep = session.get(Sweep, sweep_id)
            message = sweep.message if sweep else "its task was deleted"
        self.log.info("sweep %s ended %s: %s", sweep_id, state.value, message)
        if state == SweepState.FAILED:
            raise AirflowFailException(message)
        return {"sweep": sweep_id, "state": state.value, "message": message}
