"""``config/kubernetes.toml``: how training pods are built beyond the catalog (scheduling per
resource spec, priority classes, the sidecar's pace, the namespace's Pod Security level, where
the pods may connect, who admits a run's pods), validated when it is read."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, IPvAnyNetwork, model_validator

from octotrain.settings import get_settings


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PriorityClass(_Config):
    minimum: int = Field(ge=-50, le=50)
    name: str = Field(min_length=1, max_length=253)


class KueueAdmission(_Config):
    """How a run's pods ask Kueue for admission, as one group (all or none): the LocalQueue
    of the run's project (``{project}`` is the project's name), and the task's priority to a
    WorkloadPriorityClass (the first entry whose ``minimum`` it reaches; none: Kueue's
    default)."""

    local_queue: str = Field(default="{project}", min_length=1, max_length=253)
    priority_classes: list[PriorityClass] = Field(default_factory=list)

    def queue_of(self, project: str) -> str:
        return self.local_queue.replace("{project}", project)

    def priority_class(self, priority: int) -> str:
        return _first_reached(self.priority_classes, priority)


class VolcanoGang(_Config):
    """How a run's pods are one Volcano PodGroup, gang-scheduled (all or none): the Volcano
    Queue of the run's project (``{project}`` is the project's name)."""

    queue: str = Field(default="default", min_length=1, max_length=253)

    def queue_of(self, project: str) -> str:
        return self.queue.replace("{project}", project)


class SpecScheduling(_Config):
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    pod_template_file: str = ""
    node_local_path: str = ""


class EgressPort(_Config):
    port: int = Field(ge=1, le=65535)
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"


class EgressRule(_Config):
    """Where a run's pods may connect beyond their own run and the cluster DNS: to these
    networks (``cidrs``, less ``except_cidrs``) and namespaces (by name), on these ports;
    neither networks nor namespaces: anywhere; no ports: any port."""

    cidrs: list[IPvAnyNetwork] = Field(default_factory=list)
    except_cidrs: list[IPvAnyNetwork] = Field(default_factory=list)
    namespaces: list[str] = Field(default_factory=list)
    ports: list[EgressPort] = Field(default_factory=list)

    @model_validator(mode="after")
    def _excepts_need_networks(self) -> EgressRule:
        if self.except_cidrs and not self.cidrs:
            raise ValueError("except_cidrs: only allowed beside cidrs (what they are cut from)")
        return self


class KubernetesConfig(_Config):
    deferrable: bool = True
    sync_interval_seconds: float = Field(default=5, gt=0, le=300)
    abort_check_seconds: float = Field(default=2, gt=0, le=60)
    pod_poll_seconds: float = Field(default=2, gt=0, le=300)
    final_upload_timeout_seconds: int = Field(default=3600, ge=10)
    launch_retries: int = Field(default=2, ge=0, le=10)
    master_port: int = Field(default=29500, ge=1024, le=65535)
    startup_timeout_seconds: int = Field(default=600, ge=10)
    startup_check_interval_seconds: int = Field(default=5, ge=1, le=60)
    object_store_secret: str = ""
    node_cache_host_path: str = ""
    # The Pod Security Standard the training namespace enforces
    # (docs/concepts/kubernetes-launcher.md).
    pod_security: Literal["restricted", "baseline"] = "restricted"
    egress: list[EgressRule] = Field(default_factory=list)
    priority_classes: list[PriorityClass] = Field(default_factory=list)
    resource_specs: dict[str, SpecScheduling] = Field(default_factory=dict)
    # Who admits a run's pods: "" (nobody: each pod is scheduled as it comes), "kueue" (all
    # of a run's pods at once, or none, in the project's queue: the [kueue] table) or "volcano"
    # (Volcano's scheduler places them as one PodGroup: the [volcano] table).
    admission: Literal["", "kueue", "volcano"] = ""
    kueue: KueueAdmission = Field(default_factory=KueueAdmission)
    volcano: VolcanoGang = Field(default_factory=VolcanoGang)

    def priority_class(self, priority: int) -> str:
        """The PriorityClass of a task priority: the first class whose minimum it reaches."""
        return _first_reached(self.priority_classes, priority)

    def scheduling(self, spec: str) -> SpecScheduling:
        return self.resource_specs.get(spec, SpecScheduling())


def _first_reached(classes: list[PriorityClass], priority: int) -> str:
    """The name of the first class (highest minimum first) whose minimum ``priority`` reaches."""
    for entry in sorted(classes, key=lambda item: -item.minimum):
        if priority >= entry.minimum:
            return entry.name
    return ""


def kubernetes_config(path: Path | None = None) -> KubernetesConfig:
    """The file ``path``, by default the one the ``kubernetes_config_file`` setting names."""
    return _read(path or get_settings().kubernetes_config_file)


@lru_cache(maxsize=4)
def _read(path: Path) -> KubernetesConfig:
    return KubernetesConfig.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
