"""SQLAlchemy 2 models of the catalog.

The catalog is Octotrain's own database, separate from Airflow's metadata DB, so that training
tasks, datasets and model versions outlive any Airflow installation. Enumerations are stored as
checked strings (no native enums) so that the same schema works on SQLite and PostgreSQL.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from octotrain.manifests import content_digest, total_size
from octotrain.task_spec import TaskSpec, saved_task_spec

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
# Every row's id is never given again once its row is deleted: ids name DAGs, pages, compare
# links, bookmarks and lineage records. PostgreSQL's sequences never reuse one; SQLite reuses
# the highest id after its row is deleted unless the table has AUTOINCREMENT.
NEVER_REUSED_IDS = {"sqlite_autoincrement": True}


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """``moment`` with its time zone; SQLite gives back naive datetimes, which are UTC here."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _enum(enum_cls: type[enum.Enum], name: str) -> Enum:
    return Enum(
        enum_cls,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=32,
        values_callable=lambda members: [member.value for member in members],
    )


class SpecKind(enum.StrEnum):
    """Resource-spec cluster types of the manual: ModelArts clusters allow network mounts."""

    CCE = "cce"
    MODELARTS = "modelarts"


class AlgorithmType(enum.StrEnum):
    CUSTOM_SCRIPT = "custom_script"
    IMAGE_ONLY = "image_only"  # "image only (contains algorithm files)"
    PRESET = "preset"


class AnnotationStatus(enum.StrEnum):
    ANNOTATED = "annotated"
    ANNOTATING = "annotating"
    UNANNOTATED = "unannotated"


class DatasetVersionStatus(enum.StrEnum):
    PUBLISHED = "published"
    IMPORTED_AWAITING_RELEASE = "imported_awaiting_release"
    IMPORTING = "importing"
    FAILED = "failed"


class CacheStatus(enum.StrEnum):
    CACHING = "caching"
    CACHED = "cached"
    EXPIRED = "expired"
    FAILED = "failed"


class ModelVersionStatus(enum.StrEnum):
    COMPLETE = "complete"
    FAILED = "failed"


class ModelVersionSource(enum.StrEnum):
    TRAINING = "training"
    IMPORTED = "imported"


class RunState(enum.StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"
    STOPPED = "stopped"
    # A sweep's trial its pruner stopped early (hopeless against the others): not a failure.
    PRUNED = "pruned"


class SweepState(enum.StrEnum):
    """A sweep is ``created`` until started, ``running`` while its driver asks for trials,
    ``stopping`` once a user asked it to stop (its running trials are being stopped), then ends
    once: ``finished`` (its budget spent), ``stopped`` (a user) or ``failed`` (too many trials
    failed in a row, or the sweep could not go on), saying why."""

    CREATED = "created"
    RUNNING = "running"
    STOPPING = "stopping"
    FINISHED = "finished"
    STOPPED = "stopped"
    FAILED = "failed"


class StoredFiles:
    """The files of a dataset version, data cache or model version in the object store: their
    prefix, and the manifest recorded when they were written ({relative path: {"size",
    "blake3"}}), against which every download is verified. ``content_digest`` (over the
    manifest) identifies the content itself, e.g. for a node's local cache."""

    object_prefix: Mapped[str] = mapped_column(String(512))
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    file_count: Mapped[int] = mapped_column(Integer, default=0)
    manifest: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    content_digest: Mapped[str] = mapped_column(String(64), default="")

    def record(self, manifest: dict[str, Any]) -> None:
        self.manifest = manifest
        self.content_digest = content_digest(manifest)
        self.size_bytes = total_size(manifest)
        self.file_count = len(manifest)


class Project(Base):
    """Everything else belongs to one project; users see only the projects they are members
    of (Airflow admins see all)."""

    __tablename__ = "projects"
    __table_args__ = (NEVER_REUSED_IDS,)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str] = mapped_column(String(256), default="")
    # The most nodes one task of the project may ask for, whatever its resource spec allows.
    max_nodes: Mapped[int] = mapped_column(Integer, default=64)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    members: Mapped[list[ProjectMember]] = relationship(
        back_populates="project", cascade="all, delete-orphan", order_by="ProjectMember.username"
    )


class ProjectMember(Base):
    """An Airflow user (by user name, as Airflow's auth manager reports it) in a project."""

    __tablename__ = "project_members"
    __table_args__ = (UniqueConstraint("project_id", "username"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    username: Mapped[str] = mapped_column(String(256))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    project: Mapped[Project] = relationship(back_populates="members")


class ResourceSpec(Base):
    __tablename__ = "resource_specs"
    __table_args__ = (UniqueConstraint("project_id", "name"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    name: Mapped[str] = mapped_column(String(64))
    kind: Mapped[SpecKind] = mapped_column(_enum(SpecKind, "spec_kind"))
    cpu: Mapped[float] = mapped_column(Float)
    memory_mib: Mapped[int] = mapped_column(Integer)
    gpu_count: Mapped[int] = mapped_column(Integer, default=0)
    gpu_type: Mapped[str] = mapped_column(String(64), default="")
    max_nodes: Mapped[int] = mapped_column(Integer, default=1)
    # ModelArts specs: the volume of config/mount_volumes.toml that resource mounts come from
    # on Kubernetes ("" for none).
    mount_volume: Mapped[str] = mapped_column(String(64), default="")

    project: Mapped[Project] = relationship()


class Algorithm(Base):
    __tablename__ = "algorithms"
    __table_args__ = (UniqueConstraint("project_id", "name"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(String(256), default="")
    algorithm_type: Mapped[AlgorithmType] = mapped_column(_enum(AlgorithmType, "algorithm_type"))
    image: Mapped[str] = mapped_column(String(512))
    # The command as an argument list; the local launcher and the pod both run it unchanged.
    command: Mapped[list[Any]] = mapped_column(JSON)
    # [{"name", "type", "default", "description", "choices"?, "min"?, "max"?}]
    parameters: Mapped[list[Any]] = mapped_column(JSON, default=list)
    env: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    sample_type: Mapped[str] = mapped_column(String(32))
    # Charts extracted from the train log: [{"name", "regex", "x", "ys", "description",
    # "smooth"}] (octotrain.metric_definitions).
    metric_definitions: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    project: Mapped[Project] = relationship()
    # Its uploaded code, oldest first; a task runs the version it was saved with.
    code_versions: Mapped[list[AlgorithmCode]] = relationship(
        back_populates="algorithm", order_by="AlgorithmCode.version"
    )


class AlgorithmCode(StoredFiles, Base):
    """One upload of an algorithm's code folder, never changed afterwards: a node receives
    it as its ``CODE`` folder (the manual's code directory) and runs the command there.
    ``version`` counts up per algorithm; uploading code again makes the next one."""

    __tablename__ = "algorithm_code_versions"
    __table_args__ = (UniqueConstraint("algorithm_id", "version"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    algorithm_id: Mapped[int] = mapped_column(ForeignKey("algorithms.id", ondelete="RESTRICT"))
    version: Mapped[int] = mapped_column(Integer)
    # Who uploaded it (the Airflow user, or the CLI's account).
    uploaded_by: Mapped[str] = mapped_column(String(256), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    algorithm: Mapped[Algorithm] = relationship(back_populates="code_versions")


class Dataset(Base):
    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("project_id", "name"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    name: Mapped[str] = mapped_column(String(64))
    sample_type: Mapped[str] = mapped_column(String(32))
    annotation_status: Mapped[AnnotationStatus] = mapped_column(
        _enum(AnnotationStatus, "annotation_status")
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    project: Mapped[Project] = relationship()
    versions: Mapped[list[DatasetVersion]] = relationship(
        back_populates="dataset", order_by="DatasetVersion.id"
    )


class DatasetVersion(StoredFiles, Base):
    __tablename__ = "dataset_versions"
    __table_args__ = (
        UniqueConstraint("dataset_id", "version"),
        # A dataset's versions in the order they were made, a page of them.
        Index("ix_dataset_versions_dataset_id_id", "dataset_id", "id"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="RESTRICT"))
    version: Mapped[str] = mapped_column(String(32))
    status: Mapped[DatasetVersionStatus] = mapped_column(
        _enum(DatasetVersionStatus, "dataset_version_status")
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    dataset: Mapped[Dataset] = relationship(back_populates="versions")
    # Lineage the other way: the model versions trained from this dataset version.
    produced: Mapped[list[ModelVersionInput]] = relationship(
        viewonly=True, foreign_keys="ModelVersionInput.dataset_version_id"
    )


class DataCache(StoredFiles, Base):
    """A pre-staged copy of a dataset version. It is ``caching`` until the data-cache job has
    filled it (``object_prefix`` empty until then), then ``cached`` until ``expires_at`` and
    ``expired`` after, both usable; a refresh (requested by a user, or by a run that used it
    expired) copies it again beside the copy in use and switches when complete."""

    __tablename__ = "data_caches"
    __table_args__ = (UniqueConstraint("project_id", "name"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    name: Mapped[str] = mapped_column(String(64))
    dataset_version_id: Mapped[int] = mapped_column(
        ForeignKey("dataset_versions.id", ondelete="RESTRICT")
    )
    status: Mapped[CacheStatus] = mapped_column(_enum(CacheStatus, "cache_status"))
    ttl_hours: Mapped[int] = mapped_column(Integer, default=24 * 7)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    refresh_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    # Why the last fill failed ("" when it did not).
    message: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    project: Mapped[Project] = relationship()
    dataset_version: Mapped[DatasetVersion] = relationship()

    def current_status(self, now: datetime | None = None) -> CacheStatus:
        """The status as of ``now``: a cached copy past its expiry is ``expired`` (still usable,
        as the manual allows, until it is refreshed)."""
        if (
            self.status == CacheStatus.CACHED
            and self.expires_at is not None
            and as_utc(self.expires_at) <= (now or utcnow())
        ):
            return CacheStatus.EXPIRED
        return self.status


class ModelRepository(Base):
    __tablename__ = "model_repositories"
    __table_args__ = (UniqueConstraint("project_id", "name"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(String(256), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    project: Mapped[Project] = relationship()
    versions: Mapped[list[ModelVersion]] = relationship(
        back_populates="repository", order_by="ModelVersion.version"
    )


class ModelVersion(StoredFiles, Base):
    """One archived model; ``version`` counts up per repository (unique, so racing archives
    of the same repository cannot both take the same number)."""

    __tablename__ = "model_versions"
    __table_args__ = (UniqueConstraint("repository_id", "version"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repository_id: Mapped[int] = mapped_column(
        ForeignKey("model_repositories.id", ondelete="RESTRICT")
    )
    version: Mapped[int] = mapped_column(Integer)
    status: Mapped[ModelVersionStatus] = mapped_column(
        _enum(ModelVersionStatus, "model_version_status")
    )
    source: Mapped[ModelVersionSource] = mapped_column(
        _enum(ModelVersionSource, "model_version_source")
    )
    description: Mapped[str] = mapped_column(String(256), default="")
    # What made it: task, run, algorithm, image, parameters, inputs (docs: model versions).
    lineage: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    repository: Mapped[ModelRepository] = relationship(back_populates="versions")
    inputs: Mapped[list[ModelVersionInput]] = relationship(
        back_populates="model_version",
        cascade="all, delete-orphan",
        foreign_keys="ModelVersionInput.model_version_id",
    )
    # Lineage the other way: the model versions trained from this one (incremental training).
    produced: Mapped[list[ModelVersionInput]] = relationship(
        viewonly=True, foreign_keys="ModelVersionInput.input_model_version_id"
    )
    # The run that archived it (None for an imported version, or once that run was deleted).
    made_by: Mapped[Run | None] = relationship(
        "Run",
        primaryjoin="Run.model_version_id == ModelVersion.id",
        foreign_keys="Run.model_version_id",
        viewonly=True,
        uselist=False,
    )


class ModelVersionInput(Base):
    """One edge of lineage: a dataset version or an input model version that a model version
    was trained from. Relational (not only in ``lineage``) so that lineage can be followed
    both ways and a dataset or model version that made a model cannot be deleted."""

    __tablename__ = "model_version_inputs"
    __table_args__ = (
        CheckConstraint(
            "(dataset_version_id IS NULL) <> (input_model_version_id IS NULL)",
            name="one_input",
        ),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_version_id: Mapped[int] = mapped_column(
        ForeignKey("model_versions.id", ondelete="CASCADE"), index=True
    )
    dataset_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("dataset_versions.id", ondelete="RESTRICT"), nullable=True, index=True
    )
    input_model_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id", ondelete="RESTRICT"), nullable=True, index=True
    )
    # How the input reached the nodes: "dataset", "cache:<name>" or "model".
    via: Mapped[str] = mapped_column(String(80), default="dataset")

    model_version: Mapped[ModelVersion] = relationship(
        back_populates="inputs", foreign_keys=[model_version_id]
    )
    dataset_version: Mapped[DatasetVersion | None] = relationship()
    input_model_version: Mapped[ModelVersion | None] = relationship(
        foreign_keys=[input_model_version_id]
    )


class TrainingTask(Base):
    """A saved training task. Its definition is the validated task document (``spec``), which
    names the catalog objects it uses, so that a reference that has since disappeared is
    reported by name when the task runs."""

    __tablename__ = "training_tasks"
    # Its id names its Airflow DAG, which outlives it (retired, with its runs' history): SQLite
    # must not give a deleted task's id to the next one (PostgreSQL's sequence never does).
    __table_args__ = (UniqueConstraint("project_id", "name"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="RESTRICT"))
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(String(256), default="")
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    # "ma-user" for image-only algorithms on ModelArts specs (the manual), else "" (the uid).
    container_user: Mapped[str] = mapped_column(String(32), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )

    project: Mapped[Project] = relationship()
    runs: Mapped[list[Run]] = relationship(
        back_populates="task",
        order_by="Run.id",
        cascade="all, delete-orphan",
        passive_deletes=True,
    )

    @property
    def document(self) -> TaskSpec:
        """``spec`` typed: the one reading of a saved task (``saved_task_spec``)."""
        return saved_task_spec(self.spec)


class Run(Base):
    """One Airflow DAG run of a training task, as Octotrain sees it."""

    __tablename__ = "runs"
    __table_args__ = (
        UniqueConstraint("task_id", "airflow_run_id"),
        # A task's runs newest first, a page of them, their count (octotrain.catalog.paging).
        Index("ix_runs_task_id_id", "task_id", "id"),
        # A trial is started once: its number names it within its sweep.
        UniqueConstraint("sweep_id", "trial_number"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("training_tasks.id", ondelete="CASCADE"))
    airflow_run_id: Mapped[str] = mapped_column(String(250))
    state: Mapped[RunState] = mapped_column(_enum(RunState, "run_state"))
    node_count: Mapped[int] = mapped_column(Integer)
    # The resolved plan the run was launched with (inputs, command, environment, port), its
    # secrets masked; their real values are kept apart, for the stages that start nodes only.
    plan: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    secrets: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    message: Mapped[str] = mapped_column(Text, default="")
    triggered_by: Mapped[str] = mapped_column(String(128), default="")
    # How it started: Airflow's run type ("manual", "scheduled", "asset_triggered").
    trigger: Mapped[str] = mapped_column(String(32), default="manual")
    model_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_versions.id", ondelete="SET NULL"), nullable=True
    )
    # The earlier run of the task whose checkpoint this run resumes from (octotrain.resume).
    resumed_from_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL"), nullable=True
    )
    # A sweep's trial: the sweep and the trial's number in its Optuna study (0, 1, ...).
    sweep_id: Mapped[int | None] = mapped_column(
        ForeignKey("sweeps.id", ondelete="CASCADE"), nullable=True
    )
    trial_number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    task: Mapped[TrainingTask] = relationship(back_populates="runs")
    model_version: Mapped[ModelVersion | None] = relationship()


class Sweep(Base):
    """A hyper-parameter sweep of one training task (``octotrain.sweep_spec``): its trials are
    runs of the task (``Run.sweep_id``); its search's state is its Optuna study, named
    ``study_name``, in this same database (``hooks/sweeps/sweep_study.py``). ``airflow_run_id``
    is the run of the sweeps' DAG that drives it."""

    __tablename__ = "sweeps"
    __table_args__ = (UniqueConstraint("task_id", "name"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("training_tasks.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[SweepState] = mapped_column(_enum(SweepState, "sweep_state"))
    message: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str] = mapped_column(String(256), default="")
    airflow_run_id: Mapped[str] = mapped_column(String(250), default="")
    # The best finished trial once the sweep ended (its model version is marked).
    best_run_id: Mapped[int | None] = mapped_column(
        ForeignKey("runs.id", ondelete="SET NULL", use_alter=True), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    task: Mapped[TrainingTask] = relationship()
    trials: Mapped[list[Run]] = relationship(
        primaryjoin="Run.sweep_id == Sweep.id",
        foreign_keys="Run.sweep_id",
        order_by="Run.trial_number",
        viewonly=True,
    )

    @property
    def study_name(self) -> str:
        return f"octotrain-sweep-{self.id}"


class NodeHold(Base):
    """When one node of a run held its resources: from its process's start (local launcher) or
    its pod's start on a Kubernetes node, to their end (``ended_at`` None while it holds them).
    What usage accounting (``octotrain.catalog.accounting``) bills."""

    __tablename__ = "node_holds"
    __table_args__ = (UniqueConstraint("run_id", "node_index"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    node_index: Mapped[str] = mapped_column(String(32))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class AdmissionClaim(Base):
    """A run's request, on the local launcher, for all its nodes at once (``octotrain.admission``):
    waiting while ``admitted_at`` is None, holding its demand from then until ``released_at``
    (every node ended) or its run ends. The demand and order keys are copied from the plan so
    that settling reads one table."""

    __tablename__ = "admission_claims"
    __table_args__ = (UniqueConstraint("run_id"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    project: Mapped[str] = mapped_column(String(64))
    priority: Mapped[int] = mapped_column(Integer)
    nodes: Mapped[int] = mapped_column(Integer)
    cores: Mapped[float] = mapped_column(Float)
    memory_mib: Mapped[int] = mapped_column(Integer)
    requested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    admitted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    released_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
