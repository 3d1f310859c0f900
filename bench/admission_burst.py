"""What both halves of ``bench.admission`` share: the burst (its tasks, their barrier training,
how it is triggered) and the figures a phase adds up to. The local phases are in
``bench/admission.py``, the Kubernetes ones in ``bench/admission_kubernetes.py``."""

from __future__ import annotations

import argparse
import uuid
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import sqlalchemy

from bench.load import Marks, sweep, trigger_all
from bench.scale_kubernetes import COMPONENTS, healthy
from hooks.storage.catalog import CatalogHook
from hooks.storage.object_store import default_object_store
from octotrain.catalog.named_objects import Algorithms, ModelRepositories, ResourceSpecs
from octotrain.catalog.projects import Projects
from tests.factories import ADMIN, add_task
from tests.live_airflow import HTTP_SECONDS, LiveAirflow, demo_airflow

# Nodes of one run starting further apart than this: one waited for the others.
PARTIAL_SECONDS = 15.0
# Idle while a waiting run would fit for longer than this: a deadlock, not the admitter's
# reaction to a run's end.
DEADLOCK_SECONDS = 10.0
WEIGHTS = {"demo": 2.0, "team-b": 1.0}
SHAPES = (1, 2, 4)  # nodes of a run
PRIORITIES = (-10, 0, 10)
ALGORITHM = "bench-admission-barrier"
# A node meets its partners (a TCP barrier on MASTER_PORT), trains, writes its model.
TRAINING = r"""
import hashlib, os, socket, sys, time
marker = "{marker}"
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
address, port = os.environ["MASTER_ADDR"], {port}
deadline = time.monotonic() + {timeout}
if rank == 0:
    server = socket.create_server((address, port))
    server.settimeout(max(0.1, deadline - time.monotonic()))
    peers = []
    try:
        while len(peers) < world - 1:
            peers.append(server.accept()[0])
    except TimeoutError:
        sys.exit(f"rendezvous timed out: {{len(peers) + 1}} of {{world}} nodes came")
    for peer in peers:
        peer.sendall(b"go")
elif world > 1:
    while True:
        try:
            peer = socket.create_connection((address, port), timeout=1)
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit("rendezvous timed out: node 0 never listened")
            time.sleep(0.2)
    peer.settimeout(max(0.1, deadline - time.monotonic()))
    try:
        peer.recv(2)
    except TimeoutError:
        sys.exit("rendezvous timed out waiting for the others")
time.sleep({seconds})
with open(os.path.join(os.environ["OUTPUT"], f"model-{{rank}}.txt"), "w") as model:
    model.write(os.environ["RUN_ID"])
"""
# The port the nodes meet on: MASTER_PORT, as a training reads it.
MASTER_PORT = 'int(os.environ["MASTER_PORT"])'


@dataclass
class Figures:
    """What the samples add up to in one phase."""

    wall_seconds: float = 0.0
    failed: int = 0
    partial: int = 0
    spread_max: float = 0.0
    deadlock_samples: int = 0
    idle_seconds: float = 0.0  # nothing held or training while a waiting run would fit, so far
    longest_idle: float = 0.0
    used: float = 0.0  # core-seconds training while runs waited
    usable: float = 0.0  # core-seconds the waiting runs could have used meanwhile
    contended: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def note_idle(self, seconds: float, *, idle: bool) -> None:
        """A sample in which nothing is held or training while a waiting run would fit (``idle``)
        or not: a gap while it lasts, a deadlock once it outlasts ``DEADLOCK_SECONDS``."""
        self.idle_seconds = self.idle_seconds + seconds if idle else 0.0
        self.longest_idle = max(self.longest_idle, self.idle_seconds)
        self.deadlock_samples += self.idle_seconds > DEADLOCK_SECONDS

    def utilisation(self) -> float | None:
        return self.used / self.usable if self.usable else None

    def shares(self) -> dict[str, float]:
        total = sum(self.contended.values())
        return {name: value / total for name, value in self.contended.items()} if total else {}


def burst_tasks(catalog: CatalogHook, store: object, training: str) -> list[int]:
    """A task per shape, project and priority, with the barrier's algorithm."""
    with catalog.session() as session:
        Projects(session, ADMIN).create({"name": "team-b", "description": "bench.admission"})
        ResourceSpecs(session, ADMIN).create(
            "team-b", {"name": "cpu-small", "cpu": 1, "memory_mib": 256, "max_nodes": 4}
        )
        for project in WEIGHTS:
            Algorithms(session, ADMIN, default_object_store()).create(project, {
                "name": ALGORITHM, "image": "python:3.11-slim",
                "command": ["python", "-c", training], "sample_type": "table"})  # fmt: skip
            ModelRepositories(session, ADMIN, store).create(  # type: ignore[arg-type]
                project, {"name": "bench-admission-model"}
            )
    return [
        add_task(catalog, project=project, name=f"burst-{project}-{nodes}-{priority + 10}",
                 algorithm=ALGORITHM, parameters={}, node_count=nodes, priority=priority,
                 model_repository="bench-admission-model", data_inputs=[])
        for project in WEIGHTS for nodes in SHAPES for priority in PRIORITIES
    ]  # fmt: skip


def trigger_burst(server: LiveAirflow, task_ids: list[int], runs: int) -> tuple[float, list[str]]:
    """Once Airflow is healthy, trigger ``runs`` runs at once over Octotrain's REST API, a
    spread of shapes, projects and priorities; (wall clock before the first, run ids)."""
    server.wait_until("a healthy scheduler and triggerer", lambda: healthy(server.url))
    http = httpx.Client(base_url=server.url, headers=server.admin_headers(), timeout=HTTP_SECONDS)

    def trigger(number: int) -> str:
        task = task_ids[number * 7 % len(task_ids)]
        answer = http.post(f"/octotrain/api/v1/tasks/{task}/runs",
                           json={"request_id": f"burst-{number}"})  # fmt: skip
        answer.raise_for_status()
        return str(answer.json()["dag_run_id"])

    with http:
        first, _took, run_ids = trigger_all(runs, trigger)
    return first, run_ids


@dataclass(frozen=True)
class BurstAirflow:
    """A phase's Airflow with the burst's tasks, and its catalog's database."""

    server: LiveAirflow
    task_ids: list[int]
    catalog: sqlalchemy.Engine


def burst_airflow(
    stack: ExitStack,
    root: Path,
    settings: dict[str, str],
    arguments: argparse.Namespace,
    *,
    port: str,
    metadata_url: str,
    leaks: list[str],
    foreign_children: bool = False,
) -> BurstAirflow:
    """A real Airflow on ``stack`` over the demo catalog with the burst's tasks (their nodes
    meeting on ``port``); every process of the phase is swept into ``leaks`` once it is stopped
    (``foreign_children``: this process's children so far, a control plane, are not the
    phase's)."""
    marker = f"octotrain-bench-admission-{uuid.uuid4().hex[:8]}"
    training = TRAINING.format(marker=marker, seconds=arguments.seconds, port=port,
                               timeout=arguments.rendezvous_timeout)  # fmt: skip

    def prepare(catalog: CatalogHook, store: object, _demo: object) -> list[int]:
        return burst_tasks(catalog, store, training)

    marks = Marks(marker)
    if foreign_children:
        marks.add_foreign_children()
    stack.callback(sweep, marks, leaks)
    server, task_ids = stack.enter_context(
        demo_airflow(root, settings, prepare, metadata_url=metadata_url, components=COMPONENTS)
    )
    marks.add_children()
    assert task_ids is not None
    catalog = sqlalchemy.create_engine(settings["OCTOTRAIN_CATALOG_URL"])
    stack.callback(catalog.dispose)
    return BurstAirflow(server, task_ids, catalog)
