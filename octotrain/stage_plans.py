"""A Kubernetes run's stage plan: what every node's init container stages (written once by the
``stage_data`` task at ``RunObjects.stage_plan``, read by each pod's ``octotrain node stage``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from octotrain.input_sources import StageSource
from octotrain.run_layout import RunObjects


class StagePlan(BaseModel):
    """The inputs, the algorithm's code, and the runs whose checkpoint a node restores (their
    prefixes, in order of preference)."""

    model_config = ConfigDict(frozen=True)

    data: list[StageSource]
    models: list[StageSource]
    code: StageSource | None = None
    checkpoint_sources: list[str] = []

    @classmethod
    def of(
        cls,
        data: list[StageSource],
        models: list[StageSource],
        *,
        checkpoint_sources: list[RunObjects],
        code: StageSource | None = None,
    ) -> StagePlan:
        return cls(data=data, models=models, code=code,
                   checkpoint_sources=[source.prefix for source in checkpoint_sources])  # fmt: skip

    @property
    def checkpoint_runs(self) -> list[RunObjects]:
        return [RunObjects.from_prefix(prefix) for prefix in self.checkpoint_sources]
