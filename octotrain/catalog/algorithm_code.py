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

from sqlalchemy.orm import Session

from octotrain.catalog.access import Scope
from octotrain.catalog.models import Algorithm, AlgorithmCode
from octotrain.catalog.named_objects import Algorithms
from octotrain.catalog.stored_versions import StoredVersions, next_number
from octotrain.code_folders import check_total
from octotrain.storage import ObjectStore


def code_prefix(algorithm: Algorithm, version: int) -> str:
    """Where one code version's files are: by the algorithm's id, which is never reused, so a
    deleted algorithm's code is never mistaken for a new one of the same name."""
    return f"algorithms/{algorithm.project_id}/{algorithm.id}/code/v{version}"


class AlgorithmCodes(StoredVersions[Algorithm, AlgorithmCode]):
    """The code versions of the algorithms the user of ``scope`` can see."""

    owner_service = Algorithms
    missing = "algorithm '{owner}' has no code version {version}"

    def __init__(
        self, session: Session, scope: Scope, store: ObjectStore, *, max_bytes: int
    ) -> None:
        """``max_bytes``: the bound of one version's files in all (``max_code_mb``)."""
        super().__init__(session, scope, store)
        self.max_bytes = max_bytes

    def upload(
        self, project: str, algorithm: str, files: Mapping[str, Path], *, field: str = "code"
    ) -> AlgorithmCode:
        """``files`` (relative path → local file) as the algorithm's next code version;
        ``field`` names the input a refused path came from."""
        return self.add(self.owners.get(project, algorithm), files, field=field)

    def create_algorithm(
        self, project: str, document: object, files: Mapping[str, Path]
    ) -> Algorithm:
        """A new algorithm with ``files`` as its code version 1, both or neither."""
        row = self.owners.create(project, document)
        self.add(row, files)
        return row

    def add(
        self, algorithm: Algorithm, files: Mapping[str, Path], *, field: str = "code"
    ) -> AlgorithmCode:
        """``upload`` for an algorithm row at hand (one just created in this transaction)."""
        version = next_number(self.session, AlgorithmCode.algorithm_id, algorithm.id)
        row = AlgorithmCode(
            algorithm_id=algorithm.id,
            version=version,
            uploaded_by=self.scope.username,
            object_prefix=code_prefix(algorithm, version),
        )
        self._store(
            row,
            files,
            taken=f"algorithm '{algorithm.name}' code version {version} was uploaded by another "
            "request at the same time; upload again",
            field=field,
        )
        self.session.refresh(algorithm, ["code_versions"])
        return row

    def _check(self, row: AlgorithmCode, files: Mapping[str, Path], *, field: str) -> None:
        """Also the bound of one version's files in all, before anything is uploaded."""
        super()._check(row, files, field=field)
        check_total(files, max_bytes=self.max_bytes, field=field)
