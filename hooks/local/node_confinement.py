"""The door to this machine's limits for the local launcher: hold a node to its resource spec's
memory and run it as its task's uid, as a pod would be, as far as the machine allows.

Memory: a memory cgroup made under the launcher's own (v1, or v2 where the parent delegates the
memory controller), whose OOM kill is what Kubernetes reports as ``OOMKilled``; where none can
be made, ``RLIMIT_AS`` (an allocation over it fails instead: MemoryError, ENOMEM). User: only
root may switch, and only to a uid that can run the command's interpreter, read the code and
reach the node's folders, checked here by their mode bits (ACLs are not read) before anything
starts; ``OUTPUT`` and ``METRICS`` then become that uid's, while ``DATASET``, ``MODEL`` and
``MOUNTS`` stay read-only to it. Every decision, and why, goes to the node's init log.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from octotrain.contracts import NodeFolders
from octotrain.supplemental_log import MemoryExhaustion, allocation_failed

MIB = 1024 * 1024
READ, WRITE, EXECUTE = 4, 2, 1
# How long the processes a training left behind get to disappear once killed.
CGROUP_EMPTY_SECONDS = 5.0


class CgroupUnavailable(Exception):
    """No memory cgroup can be made here; the message says why."""


@dataclass(frozen=True)
class MemoryCgroup:
    """A memory cgroup of one node, v1 (``memory.limit_in_bytes``) or v2 (``memory.max``)."""

    path: Path
    version: int

    @classmethod
    def create(cls, name: str, limit_bytes: int, *, parent: Path | None = None) -> MemoryCgroup:
        """A child of ``parent`` (the launcher's own memory cgroup when None) limited to
        ``limit_bytes`` without swap; raises ``CgroupUnavailable`` saying why not."""
        parent, version = (parent, _version_of(parent)) if parent else _own_memory_cgroup()
        limit_file = "memory.limit_in_bytes" if version == 1 else "memory.max"
        if version == 2 and "memory" not in _read(parent / "cgroup.subtree_control").split():
            raise CgroupUnavailable(f"{parent} does not delegate the memory controller (cgroup v2)")
        path = parent / name
        try:
            path.mkdir(exist_ok=True)
            (path / limit_file).write_text(str(limit_bytes))
            swap = path / ("memory.memsw.limit_in_bytes" if version == 1 else "memory.swap.max")
            if swap.exists():  # no swapping past the limit: an OOM kill, as in a pod
                swap.write_text(str(limit_bytes) if version == 1 else "0")
        except OSError as error:
            with contextlib.suppress(OSError):
                path.rmdir()
            raise CgroupUnavailable(f"cannot make the memory cgroup {path}: {error}") from error
        return cls(path=path, version=version)

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer killed a process of this cgroup."""
        events = "memory.oom_control" if self.version == 1 else "memory.events"
        found = re.search(r"^oom_kill (\d+)$", _read(self.path / events), re.MULTILINE)
        return found is not None and int(found.group(1)) > 0

    def remove(self) -> None:
        """Kill what the training left in it, then remove it."""
        deadline = time.monotonic() + CGROUP_EMPTY_SECONDS
        while True:
            pids = [int(pid) for pid in _read(self.path / "cgroup.procs").split()]
            if not pids or time.monotonic() > deadline:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        # A process that outlived the deadline keeps the (empty of limits) folder: harmless,
        # and no reason to hide how the node itself ended.
        with contextlib.suppress(OSError):
            self.path.rmdir()


@dataclass
class Confinement:
    """How one node is held to its spec and its task's user on this machine."""

    memory_limit_mib: int = 0
    memory_cgroup: MemoryCgroup | None = None
    address_space_limit: int | None = None
    uid: int | None = None
    notes: list[str] = field(default_factory=list)

    def wrapper_arguments(self) -> list[str]:
        """The training wrapper's options that apply it (agent/run_training.py)."""
        arguments = []
        if self.memory_cgroup is not None:
            arguments += ["--memory-cgroup", str(self.memory_cgroup.path)]
        if self.address_space_limit is not None:
            arguments += ["--address-space-limit", str(self.address_space_limit)]
        if self.uid is not None:
            arguments += ["--user", str(self.uid), "--group", str(self.uid)]
        return arguments

    def out_of_memory(
        self, exit_code: int | None, train_log_tail: str, last_sample_bytes: int | None
    ) -> MemoryExhaustion | None:
        """Whether the node ended because it ran out of its memory limit, and how."""
        if self.memory_cgroup is not None and self.memory_cgroup.oom_killed():
            return MemoryExhaustion(self.memory_limit_mib, "memory cgroup", last_sample_bytes)
        if (
            self.address_space_limit is not None
            and exit_code not in (0, None)
            and allocation_failed(train_log_tail)
        ):
            return MemoryExhaustion(self.memory_limit_mib, "RLIMIT_AS", last_sample_bytes)
        return None

    def release(self) -> None:
        if self.memory_cgroup is not None:
            self.memory_cgroup.remove()


def confine_node(
    *,
    name: str,
    memory_mib: int,
    gpu_count: int,
    uid: int,
    container_user: str,
    command: list[str],
    path: str,
    code_dir: Path,
    agent_dir: Path,
    folders: NodeFolders,
    cgroup_parent: Path | None = None,
) -> Confinement:
    """Decide (and prepare: the cgroup, the folders' owner) how node ``name`` runs here."""
    confinement = Confinement(memory_limit_mib=memory_mib)
    _limit_memory(confinement, name, memory_mib, gpu_count, cgroup_parent)
    _choose_user(confinement, uid, container_user, command, path, code_dir, agent_dir, folders)
    return confinement


def _limit_memory(
    confinement: Confinement,
    name: str,
    memory_mib: int,
    gpu_count: int,
    cgroup_parent: Path | None,
) -> None:
    if memory_mib <= 0:
        confinement.notes.append("the resource spec sets no memory limit: none is applied")
        return
    try:
        cgroup = MemoryCgroup.create(name, memory_mib * MIB, parent=cgroup_parent)
    except CgroupUnavailable as error:
        if gpu_count > 0:
            confinement.notes.append(
                f"no memory limit is applied: no memory cgroup could be made ({error}), and "
                "RLIMIT_AS would break CUDA, which reserves address space far beyond the memory "
                "it uses"
            )
            return
        confinement.address_space_limit = memory_mib * MIB
        confinement.notes.append(
            f"memory limit {memory_mib} MiB applied as RLIMIT_AS (address space), as no memory "
            f"cgroup could be made ({error}): an allocation over it fails (MemoryError, ENOMEM) "
            "instead of an OOM kill, and programs that reserve much address space may fail below "
            "it"
        )
        return
    confinement.memory_cgroup = cgroup
    confinement.notes.append(
        f"memory limit {memory_mib} MiB applied by the memory cgroup {cgroup.path} (cgroup "
        f"v{cgroup.version}, no swap): going over it is an OOM kill"
    )


def _choose_user(
    confinement: Confinement,
    uid: int,
    container_user: str,
    command: list[str],
    path: str,
    code_dir: Path,
    agent_dir: Path,
    folders: NodeFolders,
) -> None:
    own = os.geteuid()
    if container_user:
        confinement.notes.append(
            f"the task runs as the image's own user ({container_user}) on Kubernetes; locally "
            f"{container_user} has no uid: the training runs as uid {own}, the launcher's"
        )
        return
    if uid == own:
        confinement.notes.append(f"the training runs as uid {uid}, the task's")
        return
    if own != 0:
        confinement.notes.append(
            f"the training runs as uid {own}, not the task's uid {uid}: only a launcher running "
            "as root may switch users"
        )
        return
    problems = _problems_as(uid, command, path, code_dir, agent_dir, folders)
    if problems:
        confinement.notes.append(
            f"the training runs as uid 0 (root), not the task's uid {uid}, because as uid {uid} "
            + "; ".join(problems)
        )
        return
    for folder in (folders.output, folders.metrics):
        os.chown(folder, uid, uid)
    for path in (folders.checkpoint, *folders.checkpoint.rglob("*")):  # restored files too
        os.chown(path, uid, uid)
    confinement.uid = uid
    confinement.notes.append(
        f"the training runs as uid {uid} (group {uid}, no other groups): DATASET, MODEL and "
        "MOUNTS are read-only to it, OUTPUT, METRICS and CHECKPOINT are its own"
    )


def _problems_as(
    uid: int,
    command: list[str],
    path: str,
    code_dir: Path,
    agent_dir: Path,
    folders: NodeFolders,
) -> list[str]:
    """What would fail for the training as ``uid`` (group ``uid``), in words."""
    problems = [_command_problem(uid, command[0], path, code_dir)]
    for what, folder, want in [
        ("the code folder", code_dir, READ | EXECUTE),
        ("the agent folder (the metrics writer)", agent_dir, READ | EXECUTE),
        ("DATASET", folders.dataset, READ | EXECUTE),
        *([("MODEL", folders.model, READ | EXECUTE)] if folders.model.exists() else []),
        ("MOUNTS", folders.mounts, READ | EXECUTE),
        ("the node folder", folders.output.parent, EXECUTE),
    ]:
        blocker = _blocker(folder, uid, want)
        if blocker:
            problems.append(f"{what} {folder} cannot be used: {blocker}")
    return [problem for problem in problems if problem]


def _command_problem(uid: int, program: str, path: str, cwd: Path) -> str:
    """Whether ``program`` resolves, for ``uid``, to the same file as for the launcher."""
    mine = _resolve(program, path, cwd, os.geteuid())
    theirs = _resolve(program, path, cwd, uid)
    if theirs is None:
        why = _blocker(mine, uid, EXECUTE) if mine else "it is not on the PATH"
        return f"{program!r} cannot be run ({mine or program}: {why})"
    if mine is not None and theirs != mine:
        return f"{program!r} would be {theirs} instead of {mine} ({_blocker(mine, uid, EXECUTE)})"
    return ""


def _resolve(program: str, path: str, cwd: Path, uid: int) -> Path | None:
    """The file ``execvp`` would run for ``uid``: the first executable candidate."""
    if "/" in program:
        candidates = [cwd / program]
    else:
        candidates = [Path(folder or cwd) / program for folder in path.split(os.pathsep)]
    for candidate in candidates:
        if candidate.is_file() and _blocker(candidate, uid, EXECUTE) is None:
            return candidate
    return None


def _blocker(target: Path, uid: int, want: int) -> str | None:
    """Why ``uid`` (group ``uid``) cannot use ``target`` as ``want`` says, or None if it can:
    every folder on the way to it, as written and with its links resolved, must be searchable."""
    absolute = Path(os.path.abspath(target))
    real = Path(os.path.realpath(target))
    for route in (absolute, real):
        for folder in reversed(route.parents):
            if not _permits(folder, uid, EXECUTE):
                return f"{folder} is not searchable by uid {uid}"
    if not real.exists():
        return f"{real} does not exist"
    if not _permits(real, uid, want):
        return f"{real} is not {_words(want)} by uid {uid}"
    return None


def _permits(target: Path, uid: int, want: int) -> bool:
    """Whether the mode bits let ``uid`` (in group ``uid`` only) ``want`` on ``target``."""
    status = target.stat()
    if uid == 0:  # root may do anything, but run a file only when some x bit is set
        return not (want & EXECUTE) or stat.S_ISDIR(status.st_mode) or bool(status.st_mode & 0o111)
    if status.st_uid == uid:
        bits = status.st_mode >> 6
    elif status.st_gid == uid:
        bits = status.st_mode >> 3
    else:
        bits = status.st_mode
    return bits & want == want


def _words(want: int) -> str:
    return " and ".join(
        word for bit, word in ((READ, "readable"), (WRITE, "writable"), (EXECUTE, "executable"))
        if want & bit
    )  # fmt: skip


def _own_memory_cgroup() -> tuple[Path, int]:
    """The launcher's memory cgroup (v1 if the memory controller is mounted so, else v2)."""
    v1, v2 = None, None
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, where = line.split(":", 2)
        if "memory" in controllers.split(","):
            v1 = where
        elif controllers == "":
            v2 = where
    mounts = _cgroup_mounts()
    if v1 is not None and "memory" in mounts:
        return mounts["memory"] / v1.lstrip("/"), 1
    if v2 is not None and "cgroup2" in mounts:
        return mounts["cgroup2"] / v2.lstrip("/"), 2
    raise CgroupUnavailable("no memory cgroup controller is mounted")


def _cgroup_mounts() -> dict[str, Path]:
    """Where the v1 memory controller and the v2 hierarchy are mounted."""
    found: dict[str, Path] = {}
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        before, _, after = line.partition(" - ")
        fields, (kind, _source, options) = before.split(), after.split()[:3]
        if kind == "cgroup" and "memory" in options.split(","):
            found["memory"] = Path(fields[4])
        elif kind == "cgroup2":
            found.setdefault("cgroup2", Path(fields[4]))
    return found


def _version_of(folder: Path) -> int:
    return 1 if (folder / "memory.limit_in_bytes").exists() else 2


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
