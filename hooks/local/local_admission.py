"""The door to the local launcher's admission: what this machine gives (settings
``local_cores``, ``local_memory_gb``, ``local_nodes``, the projects' quotas of
``config/local_quotas.toml``), and a run's claim in the catalog.

The rule is ``octotrain/admission.py``'s; the claims are ``octotrain.catalog.admissions``'.
``stage_data`` asks for a run's nodes once they have their inputs; each ``launch`` task starts
its node only once the run is admitted, deferred meanwhile (``operators.local.admission_trigger``:
no worker slot is held while a run waits); a node's end settles again, so that the next run
starts as soon as there is room.
"""

from __future__ import annotations

import os
import tomllib
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from airflow.sdk import conf
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hooks.storage.catalog import default_catalog
from hooks.storage.cores import cores_available
from octotrain.admission import (
    MIB_PER_GIB,
    Capacity,
    Demand,
    ProjectQuota,
    QueueState,
    beyond_quota,
    too_large,
)
from octotrain.catalog.admissions import (
    ClaimState,
    claim_state,
    is_admitted,
    request_admission,
    settle_admissions,
)
from octotrain.catalog.models import Run
from octotrain.errors import FieldProblem, InvalidInput
from octotrain.planning import RunPlan
from octotrain.run_lifecycle import ACTIVE_RUN_STATES
from octotrain.settings import Settings, get_settings

# The name the local launcher's one queue is shown by.
LOCAL_QUEUE = "local"


class QuotaFile(BaseModel):
    """``config/local_quotas.toml``: ``[projects.<name>]`` with ``nodes``, ``cores``, ``weight``."""

    model_config = ConfigDict(extra="forbid")

    class Quota(BaseModel):
        model_config = ConfigDict(extra="forbid")

        nodes: int | None = Field(default=None, ge=1)
        cores: float | None = Field(default=None, gt=0)
        weight: float = Field(default=1.0, gt=0)

    projects: dict[str, Quota] = {}


def machine_capacity(settings: Settings | None = None) -> Capacity:
    """What admitted runs may hold together on this machine, and each project's quota."""
    settings = settings or get_settings()
    memory_mib = (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) >> 20
    return Capacity(
        nodes=settings.local_nodes or conf.getint("core", "parallelism"),
        cores=settings.local_cores or float(cores_available()),
        memory_mib=int(settings.local_memory_gb * MIB_PER_GIB) or memory_mib,
        quotas=project_quotas(settings.local_quotas_file),
    )


@lru_cache(maxsize=4)
def project_quotas(path: Path) -> dict[str, ProjectQuota]:
    """The quotas of ``path``; a file that breaks its form is an error naming the field."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        parsed = QuotaFile.model_validate(document)
    except tomllib.TOMLDecodeError as error:
        raise InvalidInput([FieldProblem(path.name, f"not TOML: {error}")]) from error
    except ValidationError as error:
        raise InvalidInput(
            FieldProblem(f"{path.name}: " + ".".join(map(str, problem["loc"])), problem["msg"])
            for problem in error.errors()
        ) from error
    return {
        name: ProjectQuota(nodes=quota.nodes, cores=quota.cores, weight=quota.weight)
        for name, quota in parsed.projects.items()
    }


def demand_of(plan: RunPlan) -> Demand:
    """What the run holds while admitted: every node's resource spec."""
    resources = plan.resources
    return Demand.of(
        nodes=len(plan.node_indices),
        cores_per_node=resources.cpu if resources else 0.0,
        memory_mib_per_node=resources.memory_mib if resources else 0,
    )


def refusal(plan: RunPlan) -> str | None:
    """Why the run can never be admitted on this machine (``validate`` refuses it then)."""
    if not get_settings().local_admission:
        return None
    why = too_large(demand_of(plan), plan.project, machine_capacity())
    if why is None:
        return None
    return (
        f"{why} (settings local_cores, local_memory_gb, local_nodes; project quotas in "
        f"{get_settings().local_quotas_file.name})"
    )


def concurrency_refusal(project: str, demand: Demand, runs: int) -> str | None:
    """Why ``runs`` runs of ``demand`` at once would be beyond the project's quota (the quota
    file); None when they would not, or admission is off. The machine's own bounds are not
    judged: runs beyond them wait for one another's nodes, as any runs do."""
    settings = get_settings()
    if not settings.local_admission:
        return None
    quota = project_quotas(settings.local_quotas_file).get(project)
    together = Demand(demand.nodes * runs, demand.cores * runs, demand.memory_mib * runs)
    beyond = beyond_quota(together, project, quota) if quota is not None else None
    if beyond is None:
        return None
    return f"{runs} runs at once need {beyond} ({settings.local_quotas_file.name})"


def request(plan: RunPlan) -> None:
    """Ask for the run's nodes, and admit whatever fits now (this run, maybe)."""
    if not get_settings().local_admission or not plan.catalog_run_id:
        return
    now = datetime.now(UTC)
    with default_catalog().session() as session:
        request_admission(
            session,
            run_id=plan.catalog_run_id,
            project=plan.project,
            priority=plan.priority,
            demand=demand_of(plan),
            now=now,
        )
    settle()


def settle() -> list[int]:
    """Release what ended runs held and admit the waiting runs that fit; the run ids admitted."""
    if not get_settings().local_admission:
        return []
    with default_catalog().session() as session:
        return settle_admissions(session, machine_capacity(), now=datetime.now(UTC))


def may_go_on(run_id: int) -> bool:
    """Whether catalog run ``run_id``'s nodes need wait no more: it is admitted, or it has
    ended (stopped while it waited)."""
    with default_catalog().session() as session:
        run = session.get(Run, run_id)
        return run is None or run.state not in ACTIVE_RUN_STATES or is_admitted(session, run_id)


def state_of(run_id: int) -> ClaimState | None:
    """Run ``run_id``'s claim with its place and reason while it waits (None: no claim)."""
    with default_catalog().session() as session:
        return claim_state(session, run_id, machine_capacity())


def queue_state(run_id: int) -> QueueState | None:
    """Run ``run_id``'s place as the pages show it (None: it asked for nothing)."""
    state = state_of(run_id)
    if state is None:
        return None
    return QueueState(
        queue=LOCAL_QUEUE,
        asked=state.demand.in_words(),
        requested_at=state.requested_at,
        admitted_at=state.admitted_at,
        position=state.place.position if state.place else None,
        reason=state.place.reason if state.place else "",
    )
