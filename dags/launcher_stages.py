"""The stages that go with each launcher, keyed as ``hooks/launchers.py`` keys the launchers (the
value of ``OCTOTRAIN_LAUNCHER``): the one place of the DAGs and the stages that reads which
launcher is configured (each launcher's builder is in its room, ``operators/local/`` and
``operators/kubernetes/``). A test holds the two tables to the same keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.sdk import BaseOperator

from octotrain.settings import get_settings
from operators.kubernetes.stages import pod_stages
from operators.local.stages import local_stages

# What a launcher adds to a run's DAG after ``validate`` (and beside ``archive_model``):
# its stage_data, its launch (mapped over the nodes) and its collect_logs.
StageBuilder = Callable[[BaseOperator, BaseOperator], tuple[BaseOperator, Any, Any]]

LAUNCHER_STAGES: dict[str, StageBuilder] = {"local": local_stages, "kubernetes": pod_stages}


def configured_stages() -> StageBuilder:
    return LAUNCHER_STAGES[get_settings().launcher]
