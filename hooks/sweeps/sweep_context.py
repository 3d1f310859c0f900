"""What a sweep is judged against (``octotrain.sweep_rules.SweepContext``), read where it is kept:
the algorithm's parameter declarations and metric definitions in the catalog, the charts the
task's last runs wrote among their files, and the quota from the configured launcher.

A METRICS chart is written by the training's own code, which declares it in ``metrics.json`` as
it runs: the catalog cannot know it before a run wrote it. So the charts a sweep may optimise are
the algorithm's metric definitions and the charts of the task's last runs (a task never run can
be swept on a metric definition only).
"""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.orm import Session

from hooks.launchers import configured_launcher, metrics_of
from hooks.runs.run_metrics import first_node, node_charts
from octotrain.admission import Demand
from octotrain.catalog.models import Algorithm, ResourceSpec, Run, TrainingTask
from octotrain.metric_definitions import MetricDefinition
from octotrain.run_lifecycle import ENDED_RUN_STATES
from octotrain.sweep_rules import SweepContext

# The task's runs whose charts count as what it writes, newest first.
RUNS_LOOKED_AT = 5
log = logging.getLogger(__name__)


def sweep_context(session: Session, task: TrainingTask) -> SweepContext:
    spec = task.document
    algorithm = session.scalars(
        select(Algorithm).where(
            Algorithm.project_id == task.project_id, Algorithm.name == spec.algorithm
        )
    ).one_or_none()
    resources = session.scalars(
        select(ResourceSpec).where(
            ResourceSpec.project_id == task.project_id, ResourceSpec.name == spec.resource_spec
        )
    ).one_or_none()
    charts: dict[str, list[str]] = {}
    for definition in algorithm.metric_definitions if algorithm else []:
        meta = MetricDefinition.model_validate(definition).chart_meta()
        charts[meta["name"]] = list(meta.get("series") or meta["ys"])
    charts = written_charts(session, task) | charts
    demand = Demand.of(
        nodes=spec.node_count,
        cores_per_node=resources.cpu if resources else 0.0,
        memory_mib_per_node=resources.memory_mib if resources else 0,
    )
    project = task.project.name
    return SweepContext(
        algorithm=spec.algorithm,
        declarations=list(algorithm.parameters) if algorithm else [],
        charts=charts,
        charts_from="its metric definitions and the charts of the task's last runs",
        concurrency_refusal=lambda runs: configured_launcher().concurrency_refusal(
            project, demand, runs
        ),
    )


def written_charts(session: Session, task: TrainingTask) -> dict[str, list[str]]:
    """The charts (and their lines) node 0 of the task's last ended runs declared."""
    runs = session.scalars(
        select(Run)
        .where(Run.task_id == task.id, Run.state.in_(ENDED_RUN_STATES))
        .order_by(Run.id.desc())
        .limit(RUNS_LOOKED_AT)
    )
    charts: dict[str, list[str]] = {}
    for run in runs:
        try:
            reader = metrics_of(run)
            for chart in node_charts(reader, first_node(reader)):
                charts.setdefault(chart.name, list(chart.lines))
        except Exception:  # a run whose files cannot be read only names no charts
            log.warning("could not read the charts of run %s", run.id, exc_info=True)
    return charts
