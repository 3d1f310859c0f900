"""Benchmark: building the pods of a 64-node task (its run plan → 64 ``V1Pod``), as the
Kubernetes launcher's 64 mapped ``launch`` task instances build them between them.

The task is the one of ``bench.task_create``: a ModelArts spec, 10 data inputs, 10 resource
mounts, 64 nodes, in a SQLite catalog. It measures, over ``--repeat`` runs (median):

- ``octotrain``: the run plan from the catalog (``build_run_plan``), then for each node a
  ``LaunchNodePodOperator`` and its ``build_pod_request_obj`` (the node's pod from
  ``octotrain.pods`` as the operator's template, merged and labelled by the provider);
- ``provider alone``: the same 64 pods, each given whole (``full_pod_spec``) to a plain
  ``KubernetesPodOperator`` and its ``build_pod_request_obj``: what the provider costs by
  itself for these pods (it merges and deep-copies them), the baseline.

and prints both times and their ratio (goal: octotrain under 0.5 s).

    uv run python -m bench.pods [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.task_create import NODES, build_catalog

# The provider logs each pod it builds (as a task would): not what is measured here.
os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")


class _TaskInstance:
    """What a ``launch`` task instance's context offers: the plan ``validate`` pushed."""

    def __init__(self, plan: dict[str, Any], map_index: int) -> None:
        self.plan, self.map_index = plan, map_index
        self.dag_id, self.task_id, self.try_number = "octotrain_task_1", "launch", 1

    def xcom_pull(self, *, task_ids: str, key: str) -> dict[str, Any]:
        return self.plan


def _context(plan: dict[str, Any], map_index: int) -> dict[str, Any]:
    return {"ti": _TaskInstance(plan, map_index), "run_id": plan["run_id"], "dag": object()}


def octotrain_pods(catalog_url: str, task_id: int) -> list[Any]:
    from hooks.storage.catalog import CatalogHook
    from octotrain.catalog.access import Scope
    from octotrain.planning import build_run_plan
    from octotrain.pods import master_address
    from octotrain.tasks import Tasks
    from operators.kubernetes.launch_pod import LaunchNodePodOperator

    catalog = CatalogHook(catalog_url)
    with catalog.session() as session:
        task = Tasks(session, Scope.administrator("bench")).get(task_id)
        plan = build_run_plan(session, task, run_id="manual__bench", master_addr="",
                              master_port=29500, triggered_by="bench")  # fmt: skip
    catalog.dispose()
    plan = plan.model_copy(update={"master_addr": master_address(plan, "octotrain")})
    document = plan.model_dump(mode="json")
    pods = []
    for number, node in enumerate(plan.node_indices):
        operator = LaunchNodePodOperator(task_id="launch", training_task_id=task_id,
                                         node_index=node)  # fmt: skip
        pods.append(operator.build_pod_request_obj(_context(document, number), dry_run=True))  # type: ignore[arg-type]
    return pods


def provider_pods(built: list[Any]) -> list[Any]:
    """The same pods, each given whole to a plain ``KubernetesPodOperator``."""
    from airflow.providers.cncf.kubernetes.operators.pod import KubernetesPodOperator

    plan = {"run_id": "manual__bench"}
    pods = []
    for number, pod in enumerate(built):
        operator = KubernetesPodOperator(task_id="launch", name=pod.metadata.name,
                                         namespace="octotrain", full_pod_spec=pod)  # fmt: skip
        pods.append(operator.build_pod_request_obj(_context(plan, number), dry_run=True))  # type: ignore[arg-type]
    return pods


def create_task(url: str, root: Path) -> int:
    """The 64-node task of ``bench.task_create``, its spec given a volume for the mounts."""
    from hooks.storage.catalog import CatalogHook
    from octotrain.catalog.access import Scope
    from octotrain.catalog.named_objects import ResourceSpecs
    from octotrain.tasks import Tasks

    document = build_catalog(url, root)
    admin = Scope.administrator("bench")
    catalog = CatalogHook(url)
    with catalog.session() as session:
        ResourceSpecs(session, admin).update(
            "demo", "modelarts-64", {"mount_volume": "datasets-pvc"}
        )
        task_id = Tasks(session, admin).create(document | {"name": "pods-64"}).id
    catalog.dispose()
    return task_id


def median_seconds(action: Any, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    with tempfile.TemporaryDirectory(prefix="octotrain-bench-pods-") as folder:
        root = Path(folder)
        url = f"sqlite:///{root / 'catalog.db'}"
        task_id = create_task(url, root)
        built = octotrain_pods(url, task_id)  # warm-up: imports, the config files' first read
        assert len(built) == NODES and len({pod.metadata.name for pod in built}) == NODES
        provider_pods(built)
        ours = median_seconds(lambda: octotrain_pods(url, task_id), repeat)
        baseline = median_seconds(lambda: provider_pods(built), repeat)
    print(f"pods of a {NODES}-node task (median of {repeat})")
    print(f"  provider alone (baseline) {baseline:8.3f} s")
    print(f"  octotrain                 {ours:8.3f} s   ratio {ours / baseline:5.2f}x   "
          f"goal < 0.5 s: {'met' if ours < 0.5 else 'NOT met'}")  # fmt: skip


if __name__ == "__main__":
    main()
