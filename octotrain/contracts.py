"""The contracts of docs/concepts/environment-contract.md in code: node names, log file names
(docs/concepts/logs-and-storage.md, made from ``NodeLogNames``) and the training environment.

Everything that a training process, the agent, the launchers and the log pages must agree on is
spelled here once, so that a rename cannot drift between them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

METRICS_META_FILE = "metrics.json"
DAG_ID_PREFIX = "octotrain_task_"
# The one DAG that drives every hyper-parameter sweep (dags/sweeps.py); its conf names the sweep.
SWEEPS_DAG_ID = "octotrain_sweeps"
# The four log files of a node, in the order the log pages list them.
LOG_KINDS = ("train", "init", "sidecar", "supplemental")
# The variables the platform sets for every training process (docs: the environment contract);
# an algorithm may not declare them, since the platform's values always win.
PLATFORM_ENV_NAMES = frozenset(
    {
        "MODEL",
        "DATASET",
        "MOUNTS",
        "OUTPUT",
        "METRICS",
        "CHECKPOINT",
        "CODE",
        "TASK_ID",
        "RUN_ID",
        "NODE_INDEX",
        "WORLD_SIZE",
        "RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "MODEL_PATH",
        "DATASET_PATH",
        "TMP_RESULT_PATH",
    }
)


def dag_id_for(task_id: int) -> str:
    """The DAG of training task ``task_id``: ASCII-safe (the task's name may be Chinese)."""
    return f"{DAG_ID_PREFIX}{task_id}"


def task_id_from_dag_id(dag_id: str) -> int:
    match = re.fullmatch(rf"{DAG_ID_PREFIX}(\d+)", dag_id)
    if match is None:
        raise ValueError(f"{dag_id!r} is not an Octotrain training task DAG")
    return int(match.group(1))


def node_indices(node_count: int) -> list[str]:
    """``single-0`` for one node; ``distributed-0`` … ``distributed-N-1`` for several."""
    if node_count < 1:
        raise ValueError(f"node_count must be at least 1, got {node_count}")
    if node_count == 1:
        return ["single-0"]
    return [f"distributed-{rank}" for rank in range(node_count)]


def rank_of(node_index: str) -> int:
    """The rank encoded in a node index (``distributed-3`` → 3)."""
    kind, _, number = node_index.rpartition("-")
    if kind not in ("single", "distributed") or not number.isdigit():
        raise ValueError(f"not a node index: {node_index!r}")
    return int(number)


@dataclass(frozen=True)
class NodeLogNames:
    """The product's four log file names for one node of one task."""

    task_id: int
    node_index: str

    @property
    def train(self) -> str:
        """The training process's stdout and stderr, as it printed them."""
        return f"train-{self.task_id}-{self.node_index}.log"

    @property
    def init(self) -> str:
        """Data preparation: what was staged, how much and how fast, or why it could not be;
        the checkpoint restored and how the node was confined (memory, user)."""
        return f"train-{self.task_id}-{self.node_index}-init.log"

    @property
    def sidecar(self) -> str:
        """Process control: the training's start, its pid, the signals it was sent, its exit
        status; checkpoint syncs and hang reports."""
        return f"train-{self.task_id}-{self.node_index}-sidecar.log"

    @property
    def supplemental(self) -> str:
        """Only on an abnormal end or a stop: line 1 says why (the run's message in the
        catalog), line 2 when it was written; then the details, the failure class and what was
        done about it, and the last lines of the train log, secret values masked."""
        return f"octopus-train-{self.task_id}-{self.node_index}-supplemental.logs"

    def always(self) -> list[str]:
        """The three files every node writes, however it ends."""
        return [self.train, self.init, self.sidecar]

    def by_kind(self) -> dict[str, str]:
        """Each of the four file names under its kind (``LOG_KINDS``)."""
        return {kind: getattr(self, kind) for kind in LOG_KINDS}


@dataclass(frozen=True)
class NodeFolders:
    """Where one node's contract folders are on the machine that runs it."""

    model: Path
    dataset: Path
    mounts: Path
    output: Path
    metrics: Path
    checkpoint: Path
    code: Path

    @classmethod
    def under(cls, root: Path) -> NodeFolders:
        return cls(
            model=root / "model",
            dataset=root / "dataset",
            mounts=root / "mounts",
            output=root / "output",
            metrics=root / "metrics",
            checkpoint=root / "checkpoint",
            code=root / "code",
        )

    def create(self, *, with_model: bool) -> None:
        """Make the folders; ``MODEL`` only where the node gets input models (incremental
        training): a regular training has none, and no ``MODEL`` (the manual's ``${MODEL}`` is
        incremental training's)."""
        for folder in (self.dataset, self.mounts, self.output, self.metrics, self.checkpoint):
            folder.mkdir(parents=True, exist_ok=True)
        if with_model:
            self.model.mkdir(parents=True, exist_ok=True)


def training_environment(
    *,
    folders: NodeFolders,
    task_id: int,
    run_id: str,
    node_index: str,
    world_size: int,
    master_addr: str,
    master_port: int,
    algorithm_env: dict[str, str],
    with_model: bool,
    with_code: bool = False,
) -> dict[str, str]:
    """The environment a training process sees (docs: the environment contract);
    ``MODEL`` (and ``MODEL_PATH``) only ``with_model``, for incremental training; ``CODE``
    only ``with_code``, when the algorithm has uploaded code (the command runs there).

    The algorithm's variables come first so that the platform's names always win: a task must
    not be able to point ``OUTPUT`` somewhere the archive step would not look.
    """
    env = dict(algorithm_env)
    if with_model:
        env |= {"MODEL": str(folders.model), "MODEL_PATH": str(folders.model)}
    else:  # nor may an algorithm's variable of that name pretend there is an input model
        env.pop("MODEL", None)
        env.pop("MODEL_PATH", None)
    env.pop("CODE", None)
    if with_code:
        env["CODE"] = str(folders.code)
    env.update(
        {
            "DATASET": str(folders.dataset),
            "MOUNTS": str(folders.mounts),
            "OUTPUT": str(folders.output),
            "METRICS": str(folders.metrics),
            "CHECKPOINT": str(folders.checkpoint),
            "TASK_ID": str(task_id),
            "RUN_ID": run_id,
            "NODE_INDEX": node_index,
            "WORLD_SIZE": str(world_size),
            "RANK": str(rank_of(node_index)),
            "MASTER_ADDR": master_addr,
            "MASTER_PORT": str(master_port),
            "DATASET_PATH": str(folders.dataset),
            "TMP_RESULT_PATH": str(folders.output),
        }
    )
    return env


def parameter_arguments(parameters: dict[str, object]) -> list[str]:
    """Algorithm parameters as ``--name=value`` arguments, in the algorithm's declared order."""
    return [f"--{name}={parameter_text(value)}" for name, value in parameters.items()]


def parameter_text(value: object) -> str:
    """A parameter's value as its argument spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
