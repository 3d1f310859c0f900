"""Training runs with the Kubernetes launcher, in a process of their own: the real DAGs,
operators and KubernetesPodOperator against the cluster that ``AIRFLOW_CONN_KUBERNETES_DEFAULT``
points at (the tests' control plane, or a real cluster for the ``k8s_real`` tests).

    k8s_runner.py dag SCENARIO ...          # each scenario's task run through dag.test()
    k8s_runner.py prepare TASK PLAN_FILE    # validate + stage_data of the task named TASK
    k8s_runner.py launch PLAN_FILE NODE TRY # one node's launch task instance, try TRY (its
                                            # deferrals run here, as the triggerer would)
    k8s_runner.py collect PLAN_FILE         # collect_logs, then delete_service

Called by tests/e2e/test_kubernetes_run.py with AIRFLOW_HOME, the metadata DB and the
OCTOTRAIN_* settings in the environment; prints one ``RESULT {json}`` line per step.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import TaskDeferred
from sqlalchemy import select

from hooks.storage.catalog import default_catalog
from hooks.storage.object_store import default_object_store
from hooks.sweeps.sweep_trials import TaskTrials, objective_points
from octotrain.abort_flags import AbortFlag
from octotrain.catalog.access import Scope
from octotrain.catalog.models import Run, RunState, TrainingTask
from octotrain.catalog.named_objects import Algorithms, ResourceSpecs
from octotrain.contracts import NodeLogNames
from octotrain.kubernetes_config import kubernetes_config
from octotrain.planning import RunPlan, build_run_plan, run_key
from octotrain.pods import master_address
from octotrain.settings import get_settings
from octotrain.sweep_spec import Objective
from operators.kubernetes.collect_pod_logs import CollectPodLogsOperator
from operators.kubernetes.delete_service import DeleteRunServiceOperator
from operators.kubernetes.launch_pod import LaunchNodePodOperator
from operators.kubernetes.prepare_pods import PreparePodsOperator
from tests.e2e.dag_test_runner import run, stop_through_octotrain
from tests.factories import add_command_algorithm, add_task, seed
from tests.stored_run_files import stored_text

ADMIN = Scope.administrator("k8s-e2e")
# Node 0 fails at once; node 1 trains for 3 s and succeeds, unless it is stopped first.
# Its variable API_TOKEN is a secret: its pods read it from the run's Secret.
SECRET_TOKEN = "abc123-secret"
RANK_0_FAILS = (
    "import os, sys, time\n"
    "print('node', os.environ['NODE_INDEX'], 'starting', flush=True)\n"
    "import hashlib\n"
    "token = hashlib.sha256(os.environ['API_TOKEN'].encode()).hexdigest()\n"  # not the value
    f"print('secret token', 'given' if token == {hashlib.sha256(SECRET_TOKEN.encode()).hexdigest()!r} else 'wrong')\n"  # noqa: E501
    "if os.environ['RANK'] == '0':\n"
    "    sys.exit(3)\n"
    "time.sleep(3)\n"
)
# Node 0 fails after 2 s while node 1 trains on until it is stopped.
FAILS_WHILE_THE_OTHER_TRAINS = (
    "import os, sys, time\n"
    "print('node', os.environ['NODE_INDEX'], 'starting', flush=True)\n"
    "if os.environ['RANK'] == '0':\n"
    "    time.sleep(2)\n"
    "    sys.exit(3)\n"
    "time.sleep(120)\n"
)
EATS_MEMORY = (
    "import time\n"
    "print('allocating', flush=True)\n"
    "hoard = b'x' * (1536 * 1024 * 1024)\n"
    "time.sleep(60)\n"
)
# Ignores SIGTERM: a stop ends it only by the kill after the grace period.
TRAINS_UNTIL_STOPPED = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "for epoch in range(600):\n"
    "    print('epoch', epoch, flush=True)\n"
    "    time.sleep(0.2)\n"
)
# Prints an epoch, then says nothing while it lives: hung, for hang detection; it saves a
# checkpoint when it is stopped.
GOES_SILENT = (
    "import os, pathlib, signal, sys, time\n"
    "def save(*_):\n"
    "    pathlib.Path(os.environ['CHECKPOINT'], 'last.pt').write_bytes(b'state')\n"
    "    print('saved a checkpoint', flush=True)\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, save)\n"
    "print('epoch 0', flush=True)\n"
    "time.sleep(120)\n"
)
# Says nothing for 6 s, then trains on and writes its model: a hang that ends by itself.
PAUSES = (
    "import os, pathlib, time\n"
    "print('epoch 0', flush=True)\n"
    "time.sleep(6)\n"
    "for epoch in range(1, 6):\n"
    "    print('epoch', epoch, flush=True)\n"
    "    time.sleep(0.2)\n"
    "pathlib.Path(os.environ['OUTPUT'], 'model.txt').write_text('weights')\n"
)
# 80 steps of a fifth of a second, a checkpoint after each (written aside, renamed into place, as
# a PyTorch user saves one); started again, it goes on from its newest checkpoint. Its model
# says how many steps made it: the same whether or not it was restarted on the way.
CHECKPOINTS_EVERY_STEP = (
    "import os, pathlib, time\n"
    "folder = pathlib.Path(os.environ['CHECKPOINT'])\n"
    "saved = sorted(int(p.stem.removeprefix('step-')) for p in folder.glob('step-*.txt'))\n"
    "step = saved[-1] if saved else 0\n"
    "print('node', os.environ['NODE_INDEX'], 'starts at step', step, flush=True)\n"
    "while step < 80:\n"
    "    time.sleep(0.2)\n"
    "    step += 1\n"
    "    (folder / 'step.tmp').write_text(str(step))\n"
    "    (folder / 'step.tmp').replace(folder / f'step-{step}.txt')\n"
    "    print('step', step, flush=True)\n"
    "pathlib.Path(os.environ['OUTPUT'], 'model.txt').write_text(f'weights after {step} steps')\n"
)
# Four nodes meet as torchrun's do: rank 0 listens on MASTER_ADDR:MASTER_PORT (its own name under
# the run's headless Service) until the other three have connected, then tells them to go.
MEETS_ITS_PEERS = (
    "import os, socket, time\n"
    "rank, world = int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])\n"
    "address = (os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT']))\n"
    "print('rank', rank, 'of', world, 'meets at', address[0], flush=True)\n"
    "if rank == 0:\n"
    "    with socket.create_server(address) as server:\n"
    "        server.settimeout(120)\n"
    "        peers = [server.accept()[0] for _ in range(world - 1)]\n"
    "    for peer in peers:\n"
    "        peer.sendall(b'go')\n"
    "        peer.close()\n"
    "else:\n"
    "    deadline = time.monotonic() + 120\n"
    "    while True:\n"
    "        try:\n"
    "            peer = socket.create_connection(address, timeout=120)\n"
    "            break\n"
    "        except OSError:\n"
    "            assert time.monotonic() < deadline, 'rank 0 never listened'\n"
    "            time.sleep(0.2)\n"
    "    assert peer.recv(2) == b'go'\n"
    "    peer.close()\n"
    "print('rank', rank, 'met all', world, flush=True)\n"
)
# A sweep's trial: prints its loss each fifth of a second (the algorithm's metric definition makes
# it the chart "loss") until its sweep prunes it.
REPORTS_ITS_LOSS = (
    "import time\n"
    "for step in range(1, 600):\n"
    "    print(f'step={step} loss={10.0 / step}', flush=True)\n"
    "    time.sleep(0.2)\n"
)
LOSS_DEFINITION = {"name": "loss", "regex": "step=(?P<step>\\d+) loss=(?P<loss>[0-9.e+-]+)"}
# Its interpreter is not in the image.
MISSING_INTERPRETER = "/nonexistent/python3"
# About 6 s of training with a log line per epoch and a model file at the end.
TRAINS_SLOWLY = (
    "import os, pathlib, time\n"
    "for epoch in range(30):\n"
    "    print('epoch', epoch, 'of node', os.environ['NODE_INDEX'], flush=True)\n"
    "    time.sleep(0.2)\n"
    "pathlib.Path(os.environ['OUTPUT'], 'model.txt').write_text('weights')\n"
    "print('training finished', flush=True)\n"
)


def setup() -> dict[str, int]:
    """The demo catalog (its algorithm's code uploaded to the store: a pod receives it as
    ``CODE`` and runs ``python train.py`` there) and one task per scenario. On a real cluster
    the algorithms run in ``OCTOTRAIN_E2E_ALGORITHM_IMAGE``."""
    catalog = default_catalog()
    catalog.migrate()
    seed(catalog, default_object_store())
    image = os.environ.get("OCTOTRAIN_E2E_ALGORITHM_IMAGE")
    with catalog.session() as session:
        if image:
            Algorithms(session, ADMIN, default_object_store()).update(
                "demo", "linear-regression-numpy", {"image": image}
            )
        ResourceSpecs(session, ADMIN).create(
            "demo",
            {"name": "gpu-one", "kind": "cce", "cpu": 1, "memory_mib": 512, "gpu_count": 1,
             "max_nodes": 4},
        )  # fmt: skip
    for name, code in [("rank-0-fails", RANK_0_FAILS), ("eats-memory", EATS_MEMORY),
                       ("trains-until-stopped", TRAINS_UNTIL_STOPPED),
                       ("trains-slowly", TRAINS_SLOWLY),
                       ("fails-while-the-other-trains", FAILS_WHILE_THE_OTHER_TRAINS),
                       ("goes-silent", GOES_SILENT),
                       ("checkpoints-every-step", CHECKPOINTS_EVERY_STEP), ("pauses", PAUSES),
                       ("meets-its-peers", MEETS_ITS_PEERS), ("cannot-start", "pass"),
                       ("reports-its-loss", REPORTS_ITS_LOSS)]:  # fmt: skip
        add_command_algorithm(catalog, name, code)
        if image:
            with catalog.session() as session:
                Algorithms(session, ADMIN, default_object_store()).update(
                    "demo", name, {"image": image}
                )
    with catalog.session() as session:
        Algorithms(session, ADMIN, default_object_store()).update(
            "demo", "rank-0-fails", {"env": {"API_TOKEN": "x"}}
        )
    with catalog.session() as session:
        Algorithms(session, ADMIN, default_object_store()).update(
            "demo", "reports-its-loss", {"metric_definitions": [LOSS_DEFINITION]}
        )
    with catalog.session() as session:
        command = [MISSING_INTERPRETER, "-c", "pass"]
        Algorithms(session, ADMIN, default_object_store()).update(
            "demo", "cannot-start", {"command": command}
        )
    return {
        "demo": add_task(catalog, name="demo-on-k8s"),
        "node-fails": add_task(
            catalog,
            name="node-fails",
            algorithm="rank-0-fails",
            parameters={},
            env={"API_TOKEN": SECRET_TOKEN},
        ),
        "oom": add_task(catalog, name="oom", algorithm="eats-memory", parameters={}),
        "unschedulable": add_task(catalog, name="no-gpu", resource_spec="gpu-one"),
        "stop": add_task(catalog, name="stop", algorithm="trains-until-stopped", parameters={}),
        "prune": add_task(
            catalog, name="prune", algorithm="reports-its-loss", parameters={}, node_count=1
        ),
        "start-fails": add_task(
            catalog, name="start-fails", algorithm="cannot-start", parameters={}
        ),
        "reattach": add_task(catalog, name="reattach", algorithm="trains-slowly", parameters={}),
        "four-nodes": add_task(
            catalog, name="four-nodes", algorithm="meets-its-peers", parameters={}, node_count=4
        ),
        "too-large": add_task(
            catalog, name="too-large", algorithm="meets-its-peers", parameters={}, node_count=4
        ),
        "concurrent-failure": add_task(
            catalog,
            name="concurrent-failure",
            algorithm="fails-while-the-other-trains",
            parameters={},
        ),
        "hung": add_task(
            catalog,
            name="hung",
            algorithm="goes-silent",
            parameters={},
            node_count=1,
            hang_detection={"after_seconds": 2, "stop_when_hung": True},
        ),
        "hang-reported": add_task(
            catalog,
            name="hang-reported",
            algorithm="pauses",
            parameters={},
            node_count=1,
            hang_detection={"after_seconds": 2},
        ),
        "restarted-sync": add_task(
            catalog, name="restarted-sync", algorithm="checkpoints-every-step", parameters={}
        ),
        "apiserver-restart": add_task(
            catalog, name="apiserver-restart", algorithm="checkpoints-every-step", parameters={}
        ),
        **{
            f"admitted-{name}": add_task(
                catalog,
                name=f"admitted-{name}",
                algorithm="checkpoints-every-step",
                parameters={},
            )
            for name in ("a", "b", "without-queue")
        },
        "preempted-low": add_task(
            catalog,
            name="preempted-low",
            algorithm="checkpoints-every-step",
            parameters={},
            priority=0,
        ),
        "preempting-high": add_task(
            catalog,
            name="preempting-high",
            algorithm="checkpoints-every-step",
            parameters={},
            priority=40,
        ),
        "node-lost": add_task(
            catalog, name="node-lost", algorithm="checkpoints-every-step", parameters={}
        ),
        "restart-limit": add_task(
            catalog,
            name="restart-limit",
            algorithm="checkpoints-every-step",
            parameters={},
            max_node_restarts=1,
        ),
        "concurrent-failure-sync": add_task(
            catalog,
            name="concurrent-failure-sync",
            algorithm="fails-while-the-other-trains",
            parameters={},
        ),
    }


def stop_when_training(task_id: int, by: str) -> threading.Thread:
    """Stop the task's run (as user ``by``, through Octotrain) once a node's train log, as
    its sidecar uploads it, shows an epoch: what a user watching the logs would do."""

    def trained(run: Run) -> bool:
        store, prefix = default_object_store(), f"runs/{task_id}/{run_key(run.airflow_run_id)}"
        for node in (run.plan or {}).get("node_indices", []):
            log = stored_text(
                store, f"{prefix}/logs/{NodeLogNames(task_id=task_id, node_index=node).train}"
            )
            if log and "epoch" in log:
                return True
        return False

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with default_catalog().session() as session:
                active = session.scalars(
                    select(Run).where(Run.task_id == task_id, Run.state == RunState.RUNNING)
                ).one_or_none()
                if active is not None and trained(active):
                    stop_through_octotrain(active, by=by)
                    return
            time.sleep(0.2)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


class Pruning(threading.Thread):
    """A sweep's driver's part for one trial on this launcher: once the trial's objective, read
    where the launcher keeps its files (the store, as the pod's sidecar syncs it), has 3 points,
    prune it as the driver does; ``seen`` is what it read."""

    def __init__(self, task_id: int) -> None:
        super().__init__(daemon=True)
        self.task_id = task_id
        self.seen: list[tuple[float, float]] = []

    def run(self) -> None:
        objective = Objective(chart="loss", series="loss")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with default_catalog().session() as session:
                active = session.scalars(
                    select(Run).where(Run.task_id == self.task_id, Run.state == RunState.RUNNING)
                ).one_or_none()
                if active is not None:
                    self.seen = objective_points(active, objective)
                    if len(self.seen) >= 3:
                        step = int(self.seen[-1][0])
                        TaskTrials("k8s-sweep").stop(
                            active, AbortFlag.pruned_by("k8s-sweep", trial=0, step=step)
                        )
                        return
            time.sleep(0.2)


class _TaskInstance:
    """What a task instance's context offers the operators: the plan ``validate`` pushed."""

    def __init__(self, plan: RunPlan, task_id: str, map_index: int, try_number: int) -> None:
        self.plan, self.task_id, self.map_index, self.try_number = (
            plan, task_id, map_index, try_number
        )  # fmt: skip
        self.dag_id, self.run_id = f"octotrain_task_{plan.task_id}", plan.run_id
        self.pushed: dict[str, Any] = {}

    def xcom_pull(self, *, task_ids: str, key: str) -> dict[str, Any]:
        return self.plan.model_dump(mode="json")

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def _context(plan: RunPlan, task_id: str, map_index: int = -1, try_number: int = 1) -> Any:
    ti = _TaskInstance(plan, task_id, map_index, try_number)
    return {"ti": ti, "run_id": plan.run_id, "dag": object()}


def prepare(task_id: int, plan_file: Path) -> dict[str, Any]:
    """What ``validate`` and ``stage_data`` do before the nodes start."""
    with default_catalog().session() as session:
        task = session.get(TrainingTask, task_id)
        assert task is not None
        plan = build_run_plan(session, task, run_id=f"manual__{task.name}", master_addr="",
                              master_port=kubernetes_config().master_port,
                              triggered_by="k8s-e2e")  # fmt: skip
        run_row = Run(task_id=task_id, airflow_run_id=plan.run_id, state=RunState.RUNNING,
                      node_count=plan.world_size, plan=plan.shown())  # fmt: skip
        session.add(run_row)
        session.flush()
        plan = plan.model_copy(
            update={
                "catalog_run_id": run_row.id,
                "master_addr": master_address(plan, get_settings().kubernetes_namespace),
            }
        )
    plan_file.write_text(plan.model_dump_json())
    PreparePodsOperator(task_id="stage_data", training_task_id=task_id).execute(
        _context(plan, "stage_data")
    )
    return {"run_key": plan.run_key, "nodes": plan.node_indices}


def launch(plan_file: Path, node_index: str, try_number: int) -> dict[str, Any]:
    plan = RunPlan.model_validate_json(plan_file.read_text())
    context = _context(plan, "launch", plan.node_indices.index(node_index), try_number)
    run_to_the_end(
        lambda: LaunchNodePodOperator(task_id="launch", training_task_id=plan.task_id,
                                      node_index=node_index),
        context,
    )  # fmt: skip
    return {"node": node_index, "pod": context["ti"].pushed.get("pod_name")}


def run_to_the_end(new_operator: Callable[[], BaseOperator], context: Any) -> Any:
    """Run a task instance as Airflow's task runner and triggerer would: when it defers, its
    trigger is rebuilt from its serialized form (through JSON, as the metadata DB keeps it),
    run to its first event, and a new instance of the operator resumes in the method named,
    with that event; again until it no longer defers."""
    method, arguments = "execute", {}
    while True:
        try:
            return getattr(new_operator(), method)(context, **arguments)
        except TaskDeferred as deferred:
            classpath, kwargs = deferred.trigger.serialize()
            module, _, name = classpath.rpartition(".")
            trigger = getattr(importlib.import_module(module), name)(
                **json.loads(json.dumps(kwargs))
            )
            event = asyncio.run(anext(trigger.run()))
            method = deferred.method_name
            arguments = {**(deferred.kwargs or {}), "event": event.payload}


def collect(plan_file: Path) -> dict[str, Any]:
    plan = RunPlan.model_validate_json(plan_file.read_text())
    collected = CollectPodLogsOperator(task_id="collect_logs", training_task_id=plan.task_id)
    result = collected.execute(_context(plan, "collect_logs"))
    DeleteRunServiceOperator(task_id="delete_service", training_task_id=plan.task_id).execute(
        _context(plan, "delete_service")
    )
    return result


def main() -> None:
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "dag":
        tasks = setup()
        print("RESULT " + json.dumps({"scenario": "setup", "tasks": tasks}), flush=True)
        for scenario in arguments:
            watcher = stop_when_training(tasks[scenario], "alice") if scenario == "stop" else None
            pruning = Pruning(tasks[scenario]) if scenario == "prune" else None
            if pruning is not None:
                pruning.start()
            result = {"scenario": scenario, "task_id": tasks[scenario]} | run(tasks[scenario])
            if watcher is not None:
                watcher.join(timeout=5)
            if pruning is not None:
                pruning.join(timeout=5)
                result["objective_seen"] = pruning.seen
            print("RESULT " + json.dumps(result, ensure_ascii=False), flush=True)
        return
    if command == "prepare":
        with default_catalog().session() as session:
            task_id = session.scalars(
                select(TrainingTask.id).where(TrainingTask.name == arguments[0])
            ).one()
        print("RESULT " + json.dumps(prepare(task_id, Path(arguments[1]))), flush=True)
        return
    plan_file = Path(arguments[0])
    if command == "launch":
        result = launch(plan_file, arguments[1], int(arguments[2]))
    else:
        result = collect(plan_file)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
