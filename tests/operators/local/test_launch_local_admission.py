"""A local node starts only once its run is admitted whole (``hooks.local.local_admission``): its
launch task defers meanwhile, its trigger fires when there is room, and a run that could never
fit is refused by ``validate`` (through the launcher's rendezvous) before anything starts."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferred

from hooks.local import local_admission
from hooks.local.local_launcher import LocalLauncher
from hooks.storage.catalog import CatalogHook
from octotrain.catalog.models import Run, RunState
from octotrain.errors import InvalidInput
from octotrain.planning import NodeResources, RunPlan
from octotrain.settings import get_settings
from octotrain.storage import ObjectStore
from operators.local.admission_trigger import RunAdmissionTrigger
from operators.local.launch_local import LaunchLocalNodeOperator
from tests.factories import running_runs, seed


class _TaskInstance:
    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan

    def xcom_pull(self, *, task_ids: str, key: str) -> dict[str, Any]:
        return self.plan.model_dump(mode="json")


def _plan(task_id: int, run_id: int, nodes: int) -> RunPlan:
    return RunPlan.model_validate(
        {
            "task_id": task_id, "task_name": "t", "project": "demo", "run_id": f"manual__{run_id}",
            "run_key": f"r-{run_id}", "catalog_run_id": run_id,
            "node_indices": [f"distributed-{n}" for n in range(nodes)],
            "master_addr": "127.0.0.1", "master_port": 29500, "image": "i",
            "command": [sys.executable, "-c", "print('trained')"], "parameters": {}, "env": {},
            "run_as_user": "1000",
            "resources": NodeResources(spec="s", kind="cce", cpu=1, memory_mib=256, gpu_count=0),
            "data_inputs": [], "input_models": [], "mounts": [], "output_repository_id": 1,
            "output_repository": "m", "lineage": {},
        }
    )  # fmt: skip


@pytest.fixture
def two_cores(octotrain_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCTOTRAIN_LOCAL_CORES", "2")
    get_settings.cache_clear()


def test_a_node_of_a_waiting_run_defers_and_starts_once_the_run_before_it_ended(
    two_cores: None, catalog: CatalogHook, store: ObjectStore
) -> None:
    demo = seed(catalog, store)
    first_id, second_id = running_runs(catalog, demo.task_id, 2)
    first, second = _plan(demo.task_id, first_id, 2), _plan(demo.task_id, second_id, 1)
    local_admission.request(first)
    local_admission.request(second)
    assert local_admission.may_go_on(first_id) and not local_admission.may_go_on(second_id)
    state = local_admission.state_of(second_id)
    assert state is not None and state.place is not None
    assert state.place.reason == (
        "waiting for this machine: 0 of 2 cores free, the run needs 1 core"
    )
    operator = LaunchLocalNodeOperator(
        task_id="launch", training_task_id=demo.task_id, node_index="distributed-0"
    )
    operator.layout(second).logs_dir.mkdir(parents=True, exist_ok=True)
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": _TaskInstance(second)})  # type: ignore[arg-type]
    trigger = deferred.value.trigger
    assert isinstance(trigger, RunAdmissionTrigger)
    assert (trigger.run_id, trigger.settles, deferred.value.method_name) == (
        second_id, True, "execute_admitted"
    )  # fmt: skip
    assert trigger.hold_seconds == 8.0  # see the trigger's docstring: Airflow's race
    rebuilt = RunAdmissionTrigger(**trigger.serialize()[1] | {"poll_seconds": 0.05,
                                                              "settle_seconds": 0.05,
                                                              "hold_seconds": 0.8})  # fmt: skip

    async def first_ends_then_second_fires() -> dict[str, Any]:
        events = rebuilt.run()
        waiting = asyncio.ensure_future(anext(events))
        await asyncio.sleep(0.5)
        assert not waiting.done(), "fired while the first run held the machine"
        with catalog.session() as session:
            run = session.get(Run, first_id)
            assert run is not None
            run.state = RunState.SUCCESS
        await asyncio.sleep(0.15)
        assert not waiting.done(), "fired before its hold was over"
        return (await asyncio.wait_for(waiting, timeout=10)).payload

    assert asyncio.run(first_ends_then_second_fires()) == {"run_id": second_id}
    assert operator.execute_admitted({"ti": _TaskInstance(second)}) == 0  # type: ignore[arg-type]


def test_a_run_larger_than_the_machine_is_refused_before_it_starts(two_cores: None) -> None:
    with pytest.raises(InvalidInput) as refused:
        LocalLauncher().rendezvous(_plan(1, 1, 4))
    assert str(refused.value).startswith(
        "node_count: the run needs 4 cores at once and this machine has 2 cores: it could never "
        "start all its nodes together (settings local_cores, local_memory_gb, local_nodes;"
    )
    assert LocalLauncher().rendezvous(_plan(1, 1, 2))[0] == "127.0.0.1"
