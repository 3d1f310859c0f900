"""Where a run's inputs are now, looked up again when they are staged.

``validate`` resolved the inputs when the run started; by the time a node stages them a
dataset version may have been deleted, or a data cache refreshed (its copy moved). Staging
therefore reads each input's current prefix and manifest from the catalog, and reports an
input that has disappeared by name instead of failing on a missing object. A run that stages
an expired data cache asks for it to be refreshed (the manual lets it use it meanwhile).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from octotrain.catalog.models import (
    AlgorithmCode,
    CacheStatus,
    DataCache,
    DatasetVersion,
    ModelVersion,
)
from octotrain.manifests import Manifest
from octotrain.task_rules import StagedInput


@dataclass(frozen=True)
class StageSource:
    """One input as the catalog has it now: where its files are and what they must be
    (``digest`` is empty for files whose checksums were never recorded)."""

    name: str
    kind: str
    object_prefix: str
    manifest: Manifest
    digest: str


def current_sources(
    session: Session, items: list[StagedInput]
) -> tuple[list[StageSource], list[str]]:
    """The sources of ``items`` (in order), and a problem for each input that is gone."""
    sources, problems = [], []
    for item in items:
        row: DatasetVersion | DataCache | ModelVersion | AlgorithmCode | None
        if item.kind == "code":
            row = session.get(AlgorithmCode, item.code_version_id) if item.code_version_id else None
        elif item.kind == "cache":
            row = session.get(DataCache, item.cache_id) if item.cache_id else None
            if row is not None and row.current_status() == CacheStatus.EXPIRED:
                row.refresh_requested = True
        elif item.kind == "model":
            row = (
                session.get(ModelVersion, item.model_version_id) if item.model_version_id else None
            )
        else:
            row = (
                session.get(DatasetVersion, item.dataset_version_id)
                if item.dataset_version_id
                else None
            )
        if row is None or not row.object_prefix:
            problems.append(
                f"{item.kind} {item.name} was deleted after this run was validated; "
                "nothing was staged"
            )
            continue
        sources.append(
            StageSource(
                name=item.name,
                kind=item.kind,
                object_prefix=row.object_prefix,
                manifest=row.manifest,
                digest=row.content_digest,
            )
        )
    return sources, problems
