"""Archiving a run's OUTPUT as the next version of a model repository, all or nothing.

The files are uploaded under the run's own prefix (several at a time, each one's checksum
computed as it is sent), the upload is checked against the local files (every file there,
with its size), and only then is the version written: its number taken, its row pointing at
the prefix, its manifest, lineage and lineage edges, and the run marked archived, in one
transaction. Until that commits no version is visible; if anything fails the uploaded prefix
is removed (should the store itself be down, the data-cache job's sweep of orphans removes it
later).

Archiving a run is idempotent, so that Airflow may try ``archive_model`` again after its worker
died (perhaps after the commit, before it reported success), even while the first try's task
runner still lives: the run's version is found by the run's own prefix, under the repository's
lock, and no try removes objects that a committed version points at.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from hooks.runs.run_files import StoreRunFiles
from hooks.storage.catalog import CatalogHook
from octotrain.catalog.model_versions import next_version_number
from octotrain.catalog.models import (
    ModelRepository,
    ModelVersion,
    ModelVersionInput,
    ModelVersionSource,
    ModelVersionStatus,
    RunState,
)
from octotrain.manifests import Manifest, manifest_of
from octotrain.planning import RunPlan
from octotrain.run_files import read_json
from octotrain.run_layout import model_run_prefix
from octotrain.run_lifecycle import end_run
from octotrain.storage import ObjectStore, ObjectStoreError

log = logging.getLogger(__name__)
VERSION_NUMBER_ATTEMPTS = 5
UPLOAD_CONCURRENCY = 8


class ArchiveFailed(RuntimeError):
    """No version was archived; the message says why."""


class NoModelWritten(ArchiveFailed):
    """Every node succeeded, and none wrote a file to OUTPUT."""

    def __init__(self) -> None:
        super().__init__("no model files were written to OUTPUT by any node")


def archive_outputs(
    catalog: CatalogHook,
    store: ObjectStore,
    plan: RunPlan,
    files: Mapping[str, Path],
    lineage: dict[str, Any],
) -> ModelVersion:
    """Archive ``files`` (relative path → local file) as the next version of the plan's
    output repository."""
    prefix = model_run_prefix(plan.project, plan.output_repository, plan.task_id, plan.run_key)
    archived = _archived(catalog, plan, prefix)
    if archived is not None:
        return archived
    try:
        manifest = _upload(store, files, prefix)
        _check_upload(store, prefix, files)
        return _commit(catalog, plan, prefix, manifest, lineage)
    except BaseException:
        _remove_unless_archived(catalog, plan, store, prefix)
        raise


def stored_outputs(store: ObjectStore, plan: RunPlan) -> dict[str, dict[str, Any]]:
    """The merged OUTPUT of every node of a Kubernetes run, as the pods' sidecars uploaded
    it: {relative path: manifest entry + the node it comes from}. Identical files of several
    nodes are one; different content under one path is an error naming it."""
    merged: dict[str, dict[str, Any]] = {}
    files = StoreRunFiles(store, plan.objects)
    for node_index in plan.node_indices:
        manifest = read_json(files, plan.objects.output_manifest(node_index)) or {}
        for relative, entry in manifest.items():
            earlier = merged.get(relative)
            if earlier is None:
                merged[relative] = entry | {"node": node_index}
            elif earlier["blake3"] != entry["blake3"]:
                raise ArchiveFailed(
                    different_outputs(relative, f"nodes {earlier['node']} and {node_index}")
                )
    return merged


def different_outputs(relative: str, where: str) -> str:
    """The one wording, for both launchers, of nodes writing different content to one path."""
    return (
        f"nodes wrote different content to OUTPUT/{relative} ({where}); write the model "
        "from one rank only"
    )


def archive_stored_outputs(
    catalog: CatalogHook,
    store: ObjectStore,
    plan: RunPlan,
    outputs: dict[str, dict[str, Any]],
    lineage: dict[str, Any],
) -> ModelVersion:
    """Archive the ``stored_outputs`` of a run: copied inside the store (no download) under
    the run's model prefix, checked, then committed like ``archive_outputs``."""
    prefix = model_run_prefix(plan.project, plan.output_repository, plan.task_id, plan.run_key)
    archived = _archived(catalog, plan, prefix)
    if archived is not None:
        return archived
    try:
        for node_index in sorted({entry["node"] for entry in outputs.values()}):
            store.copy_prefix(plan.objects.output(node_index), prefix)
        manifest = {
            relative: {"size": entry["size"], "blake3": entry["blake3"]}
            for relative, entry in sorted(outputs.items())
        }
        listed = {info.key[len(prefix) + 1 :]: info.size for info in store.list(prefix)}
        if listed != {relative: entry["size"] for relative, entry in manifest.items()}:
            raise ArchiveFailed(f"the copy of the nodes' OUTPUT under {prefix}/ is incomplete")
        return _commit(catalog, plan, prefix, manifest, lineage)
    except BaseException:
        _remove_unless_archived(catalog, plan, store, prefix)
        raise


def _archived(catalog: CatalogHook, plan: RunPlan, prefix: str) -> ModelVersion | None:
    with catalog.session() as session:
        return _version_at(session, plan, prefix)


def _version_at(session: Session, plan: RunPlan, prefix: str) -> ModelVersion | None:
    """The version this run archived (its objects are under the run's own prefix), if any."""
    return session.scalars(
        select(ModelVersion).where(
            ModelVersion.repository_id == plan.output_repository_id,
            ModelVersion.object_prefix == prefix,
        )
    ).first()


def _remove_unless_archived(
    catalog: CatalogHook, plan: RunPlan, store: ObjectStore, prefix: str
) -> None:
    """A failed try removes what it uploaded, unless another try of the run committed it."""
    try:
        if _archived(catalog, plan, prefix) is not None:
            return
        store.delete_prefix(prefix)
    except (ObjectStoreError, SQLAlchemyError) as error:
        log.warning("could not remove %s after the failed archive: %s", prefix, error)


def _upload(store: ObjectStore, files: Mapping[str, Path], prefix: str) -> Manifest:
    with ThreadPoolExecutor(max_workers=UPLOAD_CONCURRENCY) as pool:
        written = list(
            pool.map(lambda item: store.put_file(f"{prefix}/{item[0]}", item[1]), files.items())
        )
    return manifest_of(written, prefix)


def _check_upload(store: ObjectStore, prefix: str, files: Mapping[str, Path]) -> None:
    listed = {info.key[len(prefix) + 1 :]: info.size for info in store.list(prefix)}
    expected = {relative: path.stat().st_size for relative, path in files.items()}
    if listed != expected:
        missing = sorted(set(expected) - set(listed))
        raise ArchiveFailed(
            f"the store does not hold what was uploaded to {prefix}/ (missing or short: "
            f"{missing or sorted(p for p in expected if expected[p] != listed.get(p))})"
        )


def _commit(
    catalog: CatalogHook, plan: RunPlan, prefix: str, manifest: Manifest, lineage: dict[str, Any]
) -> ModelVersion:
    for _attempt in range(VERSION_NUMBER_ATTEMPTS):
        try:
            with catalog.session() as session:
                # Archives into one repository take their numbers one at a time: without this
                # write lock (a no-op update of the repository's row, held until the commit:
                # a row lock on PostgreSQL, the write lock on SQLite), runs ending together
                # all read the same latest number and some lose every attempt. An import can
                # still take a number meanwhile (it holds no lock across its upload): then
                # the next attempt reads it.
                session.execute(
                    update(ModelRepository)
                    .where(ModelRepository.id == plan.output_repository_id)
                    .values(id=ModelRepository.id)
                    .execution_options(synchronize_session=False)
                )
                # Under that lock: another try of this run may have committed meanwhile.
                version = _version_at(session, plan, prefix) or ModelVersion(
                    repository_id=plan.output_repository_id,
                    version=next_version_number(session, plan.output_repository_id),
                    status=ModelVersionStatus.COMPLETE,
                    source=ModelVersionSource.TRAINING,
                    object_prefix=prefix,
                    lineage=lineage | {"archived_at": datetime.now(UTC).isoformat()},
                    inputs=lineage_edges(plan),
                )
                if version.id is None:
                    version.record(manifest)
                    session.add(version)
                    session.flush()
                end_run(
                    session,
                    run_id=plan.catalog_run_id,
                    state=RunState.SUCCESS,
                    model_version_id=version.id,
                )
                return version
        except IntegrityError:
            continue  # another archive or import of this repository took the number first
    raise ArchiveFailed(
        f"could not take a version number in {plan.output_repository} "
        f"after {VERSION_NUMBER_ATTEMPTS} attempts"
    )


def lineage_edges(plan: RunPlan) -> list[ModelVersionInput]:
    """The dataset versions (staged directly or through a cache, or mounted) and input model
    versions the run trained from, as the relational half of lineage."""
    edges = [
        ModelVersionInput(
            dataset_version_id=item.dataset_version_id,
            via="dataset" if item.kind == "dataset" else f"cache:{item.name}",
        )
        for item in plan.data_inputs
        if item.dataset_version_id is not None
    ]
    edges += [
        ModelVersionInput(dataset_version_id=item.dataset_version_id, via="mount")
        for item in plan.mounts
        if item.dataset_version_id is not None
    ]
    edges += [
        ModelVersionInput(input_model_version_id=item.model_version_id, via="model")
        for item in plan.input_models
        if item.model_version_id is not None
    ]
    return edges
