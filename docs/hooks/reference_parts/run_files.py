"""The parts of docs/concepts/logs-and-storage.md, a run's files named by the code that spells
them, each with its docstring: ``log-files``, every log file of a node, from the properties of
``octotrain.contracts.NodeLogNames``; ``run-objects``, every key of a run in the object store,
from ``octotrain.run_layout.RunObjects`` (and the chart index beside it), and where dataset
and model versions are; ``run-folder``, the embedded default's state folder, from
``config/defaults.toml``, and a run's folder, from ``octotrain.run_layout.RunLayout``, whose
paths are the run's keys.

A property or method of those classes without a docstring fails the build: a file is never
documented by its name alone. Placeholders stand for what differs from run to run."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from .markdown import prose_cell
from .settings import commented_keys

SAMPLE_TASK_ID = 7
SAMPLE_RUN_ID = "manual__2026-12-03T14:26:09.123456+00:00"
SAMPLE_NODE = "distributed-1"
PLACEHOLDERS = {"name": "<file>", "attempt": "<n>"}
STATE_DIR = "{state_dir}"


def log_files_reference() -> str:
    """Every log file of a node (``NodeLogNames``): its kind, its name, whether every node
    writes it, and what it holds; where the files are, in the run folder and the store."""
    from octotrain.contracts import NodeLogNames
    from octotrain.run_layout import RunLayout, RunObjects

    names = NodeLogNames(task_id=_placeholder("task_id"), node_index=_placeholder("node_index"))
    sample = NodeLogNames(task_id=SAMPLE_TASK_ID, node_index=SAMPLE_NODE)
    kinds = {file: kind for kind, file in names.by_kind().items()}
    always = set(names.always())
    rows = [
        "| kind | file | written | what it holds |",
        "|---|---|---|---|",
    ]
    for name, member in documented_members(NodeLogNames, "str"):
        file = _evaluated(names, name, member)
        written = "by every node" if file in always else "only when needed (below)"
        rows.append(f"| `{kinds.get(file, '')}` | `{file}` | {written} | {_doc(member)} |")
    layout = RunLayout(**_placeholders("runs_dir", "task_id", "run_key"))
    objects = RunObjects(**_placeholders("task_id", "run_key"))
    return (
        "\n".join(rows) + "\n\n"
        f"So node `{SAMPLE_NODE}` of task {SAMPLE_TASK_ID} writes `{sample.train}`, "
        f"`{sample.init}`, `{sample.sidecar}` and, when needed, `{sample.supplemental}`. "
        f"They are written to the run folder, `{layout.log_path('<file>')}` "
        "(`RunLayout.log_path`; a pod's own folder on Kubernetes), and kept in the object "
        f"store, `{objects.log('<file>')}` (`RunObjects.log`).\n"
    )


def run_objects_reference() -> str:
    """Every key of a run in the object store (``RunObjects``), then where dataset versions
    and model versions are."""
    from octotrain import run_layout
    from octotrain.catalog.dataset_versions import dataset_version_prefix
    from octotrain.planning import run_key
    from octotrain.run_layout import RunObjects

    objects = RunObjects(**_placeholders("task_id", "run_key"))
    rows = ["| key | in the code | what it holds |", "|---|---|---|"]
    for name, member in documented_members(RunObjects, "str"):
        key = _evaluated(objects, name, member)
        rows.append(f"| `{key}` | `RunObjects.{name}` | {_doc(member)} |")
    models = ["| prefix | in the code | what it holds |", "|---|---|---|"]
    for module, function in (
        ("dataset_versions", dataset_version_prefix),
        ("run_layout", run_layout.model_run_prefix),
        ("run_layout", run_layout.model_import_prefix),
    ):
        prefix = function(*_placeholders(*_parameters(function)).values())
        models.append(f"| `{prefix}/` | `{module}.{function.__name__}` | {_doc(function)} |")
    sample = RunObjects(SAMPLE_TASK_ID, run_key(SAMPLE_RUN_ID))
    return (
        "\n".join(rows) + "\n\n"
        f"`<run key>` is the Airflow run id made safe for a folder's name or a key, and unique "
        f"(`planning.run_key`): run `{SAMPLE_RUN_ID}` of task {SAMPLE_TASK_ID} has the prefix "
        f"`{sample.prefix}`.\n\n"
        "Dataset versions and model versions are under their dataset or repository, not under "
        "a run:\n\n" + "\n".join(models) + "\n"
    )


def run_folder_reference() -> str:
    """The embedded default's state folder (the settings whose default is under it, and
    Airflow's home), then a run's folder (``RunLayout`` and the files of the local launcher's
    run-wide flags)."""
    import tomllib
    from types import SimpleNamespace

    from cli.airflow_env import airflow_home
    from octotrain.contracts import PLATFORM_ENV_NAMES, NodeFolders
    from octotrain.run_layout import RunLayout
    from octotrain.settings import DEFAULTS_FILE, ENV_PREFIX

    text = DEFAULTS_FILE.read_text(encoding="utf-8")
    defaults = tomllib.loads(text)
    state = ["| path | setting | what it holds |", "|---|---|---|"]
    for key, comment in commented_keys(text):
        value = defaults[key]
        if isinstance(value, str) and STATE_DIR in value:
            path = value.split(STATE_DIR, 1)[1].lstrip("/")
            state.append(f"| `{path}` | `{ENV_PREFIX}{key.upper()}` | {prose_cell(comment)} |")
    home = airflow_home(_any(SimpleNamespace(state_dir=Path())))
    state.append(
        f"| `{home}` | | Airflow's home (`AIRFLOW_HOME`, `cli.airflow_env.airflow_home`): its "
        "configuration, its metadata DB, its task logs, the admin's generated password |"
    )

    layout = RunLayout(**_placeholders("runs_dir", "task_id", "run_key"))
    run_dir = layout.run_dir
    rows = ["| path in the run folder | in the code | what it holds |", "|---|---|---|"]

    def row(path: Path, code: str, meaning: str, *, folder: bool = False) -> None:
        shown = path.relative_to(run_dir).as_posix() + ("/" if folder else "")
        rows.append(f"| `{shown}` | `{code}` | {meaning} |")

    for name, member in documented_members(RunLayout, "Path", "NodeFolders"):
        if name in ("path", "create_node_folders"):  # the mapping, said below; a maker
            continue
        found = _evaluated(layout, name, member)
        if found == run_dir:  # the folder itself, named above the table
            continue
        if isinstance(found, NodeFolders):
            for field in dataclasses.fields(NodeFolders):
                variable = field.name.upper()
                if variable not in PLATFORM_ENV_NAMES:
                    raise ValueError(f"NodeFolders.{field.name} is no variable of the contract")
                row(getattr(found, field.name), f"RunLayout.{name}",
                    f"the node's `{variable}` (the environment contract)", folder=True)  # fmt: skip
        else:
            row(found, f"RunLayout.{name}", _doc(member), folder=name.endswith("_dir"))
    sample = layout.objects.abort_flag
    return (
        "\n".join(state) + "\n\n"
        f"Each run has its folder, `{run_dir}` (`RunLayout.run_dir`, `runs_dir` above), on the "
        "machine that runs its nodes. Every key of the run (the table of the object store "
        "above) is the same path below it (`RunLayout.path`): the abort flag "
        f"`{sample}` is `{layout.path(sample)}`, so `collect_logs` uploads the folder as it "
        "is, all but the nodes' working folders. The ones the local launcher's stages use by "
        "their path:\n\n" + "\n".join(rows) + "\n"
    )


def documented_members(cls: type, *returns: str) -> Iterator[tuple[str, Any]]:
    """The public properties and methods of ``cls`` whose return annotation is one of
    ``returns`` (as written: the modules postpone annotations), in the order the class defines
    them. One without a docstring fails the build: the docs would name a file without saying
    what it holds."""
    for name, member in vars(cls).items():
        if name.startswith("_") or isinstance(member, classmethod | staticmethod):
            continue
        function = member.fget if isinstance(member, property) else member
        if not callable(function) or function.__annotations__.get("return") not in returns:
            continue
        if not inspect.getdoc(function):
            raise ValueError(f"{cls.__name__}.{name} has no docstring: say what it holds")
        yield name, member


def _evaluated(instance: Any, name: str, member: Any) -> Any:
    """A property's value, or a method's for a placeholder of each of its arguments."""
    if isinstance(member, property):
        return getattr(instance, name)
    return getattr(instance, name)(*_placeholders(*_parameters(member)[1:]).values())


def _parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def _placeholders(*names: str) -> dict[str, Any]:
    """A placeholder for each argument name: ``<node index>``, ``<task id>``, or a name of
    ``PLACEHOLDERS``; typed Any, as it stands in for a number too (``task_id``)."""
    return {name: _placeholder(name) for name in names}


def _placeholder(name: str) -> Any:
    """A folder's setting (``runs_dir``) stands as a path under its own name."""
    if name.endswith("_dir"):
        return PurePosixPath(f"<{name}>")
    return PLACEHOLDERS.get(name, f"<{name.replace('_', ' ')}>")


def _any(value: object) -> Any:
    """``value`` where an object of another type is expected, of which only the attributes
    ``value`` has are read."""
    return value


def _doc(member: Any) -> str:
    """A member's docstring as a table cell, its ``code`` in Markdown's backticks."""
    function = member.fget if isinstance(member, property) else member
    return prose_cell((inspect.getdoc(function) or "").replace("``", "`"))
