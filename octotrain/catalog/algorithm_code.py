"""An algorithm's code: each upload of its folder is a new, immutable version in the object
store, numbered per algorithm. A task keeps the version it was saved with (``code_version``
in its document), so uploading new code changes no saved task's runs; a node receives its
task's version as ``CODE`` through the node cache, like a dataset version.

An upload that fails for any reason leaves no version and no object behind (the objects are
written under the version's prefix only after its row has claimed the number, and removed if
the transaction rolls back).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from octotrain.catalog.access import Scope
from octotrain.catalog.models import Algorithm, AlgorithmCode
from octotrain.catalog.named_objects import Algorithms
from octotrain.catalog.uploads import add_with_objects, check_files, upload_files
from octotrain.code_folders import check_total
from octotrain.errors import NotFound
from octotrain.storage import ObjectStore


def code_prefix(algorithm: Algorithm, version: int) -> str:
    """Where one code version's files are: by the algorithm's id, which is never reused, so a
    deleted algorithm's code is never mistaken for a new one of the same name."""
    return f"algorithms/{algorithm.project_id}/{algorithm.id}/code/v{version}"


class AlgorithmCodes:
    """The code versions of the algorithms the user of ``scope`` can see."""

    def __init__(
        self, session: Session, scope: Scope, store: ObjectStore, *, max_bytes: int
    ) -> None:
        """``max_bytes``: the bound of one version's files in all (``max_code_mb``)."""
        self.session = session
        self.scope = scope
        self.store = store
        self.max_bytes = max_bytes
        self.algorithms = Algorithms(session, scope, store)

    def list(self, project: str, algorithm: str) -> list[AlgorithmCode]:
        return list(self.algorithms.get(project, algorithm).code_versions)

    def get(self, project: str, algorithm: str, version: int) -> AlgorithmCode:
        found = self.algorithms.get(project, algorithm)
        row = next((row for row in found.code_versions if row.version == version), None)
        if row is None:
            raise NotFound(f"algorithm '{algorithm}' has no code version {version}")
        return row

    def upload(
        self, project: str, algorithm: str, files: Mapping[str, Path], *, field: str = "code"
    ) -> AlgorithmCode:
        """``files`` (relative path → local file) as the algorithm's next code version;
        ``field`` names the input a refused path came from."""
        return self.add(self.algorithms.get(project, algorithm), files, field=field)

    def create_algorithm(
        self, project: str, document: object, files: Mapping[str, Path]
    ) -> Algorithm:
        """A new algorithm with ``files`` as its code version 1, both or neither."""
        row = self.algorithms.create(project, document)
        self.add(row, files)
        return row

    def add(
        self, algorithm: Algorithm, files: Mapping[str, Path], *, field: str = "code"
    ) -> AlgorithmCode:
        """``upload`` for an algorithm row at hand (one just created in this transaction)."""
        newest = self.session.scalar(
            select(func.max(AlgorithmCode.version)).where(
                AlgorithmCode.algorithm_id == algorithm.id
            )
        )
        version = (newest or 0) + 1
        prefix = code_prefix(algorithm, version)
        check_files(files, prefix=prefix, max_key_bytes=self.store.max_key_bytes, field=field)
        check_total(files, max_bytes=self.max_bytes, field=field)
        row = AlgorithmCode(
            algorithm_id=algorithm.id,
            version=version,
            uploaded_by=self.scope.username,
            object_prefix=prefix,
        )
        add_with_objects(
            self.session,
            self.store,
            row,
            lambda prefix: upload_files(self.store, files, prefix),
            taken=f"algorithm '{algorithm.name}' code version {version} was uploaded by another "
            "request at the same time; upload again",
        )
        self.session.refresh(algorithm, ["code_versions"])
        return row
