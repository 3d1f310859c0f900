"""The local launcher holds a node to its spec's memory and runs it as its task's uid, as far as
this machine allows, and says what it did in the init log."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hooks.local.local_process import AGENT_DIR, WRAPPER
from hooks.local.node_confinement import CgroupUnavailable, Confinement, MemoryCgroup, confine_node
from octotrain.contracts import NodeFolders
from octotrain.settings import REPO_ROOT

MIB = 1024 * 1024
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="only root may switch users")
# A program any user may run on this machine, and one only its owner may reach.
SHELL = "/bin/sh"


@pytest.fixture
def public(tmp_path: Path) -> Iterator[Path]:
    """A folder other users can reach (pytest's own are private to their owner)."""
    folder = Path(tempfile.mkdtemp(prefix="octotrain-confinement-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def node_folders(base: Path) -> NodeFolders:
    folders = NodeFolders.under(base / "nodes" / "single-0")
    folders.create(with_model=True)
    return folders


def confine(folders: NodeFolders, **changes: object) -> Confinement:
    arguments: dict[str, object] = {
        "name": f"octotrain-test-{uuid.uuid4().hex[:8]}",
        "memory_mib": 0,
        "gpu_count": 0,
        "uid": 1000,
        "container_user": "",
        "command": [SHELL, "-c", "true"],
        "path": os.environ["PATH"],
        "code_dir": REPO_ROOT,
        "agent_dir": AGENT_DIR,
        "folders": folders,
    } | changes
    return confine_node(**arguments)  # type: ignore[arg-type]


def run_wrapped(tmp_path: Path, confinement: Confinement, code: str) -> int:
    completed = subprocess.run(
        [
            sys.executable, str(WRAPPER), "--train-log", str(tmp_path / "t.log"),
            "--sidecar-log", str(tmp_path / "s.log"), *confinement.wrapper_arguments(), "--",
            sys.executable, "-c", code,
        ],
        check=False, timeout=60,
    )  # fmt: skip
    return completed.returncode


def test_a_node_over_its_memory_limit_is_oom_killed_in_its_cgroup(tmp_path: Path) -> None:
    try:
        probe = MemoryCgroup.create(f"octotrain-probe-{uuid.uuid4().hex[:8]}", 64 * MIB)
    except CgroupUnavailable as error:
        pytest.skip(f"this machine lets no memory cgroup be made: {error}")
    probe.remove()
    confinement = confine(node_folders(tmp_path), memory_mib=64, uid=os.geteuid())
    try:
        assert confinement.memory_cgroup is not None
        assert "memory limit 64 MiB applied by the memory cgroup" in confinement.notes[0]
        code = run_wrapped(tmp_path, confinement, "hoard = b'x' * (256 * 1024 * 1024)")
        assert code == 137
        exhausted = confinement.out_of_memory(137, "", 60 * MIB)
        assert exhausted is not None and exhausted.enforced_by == "memory cgroup"
        assert exhausted.limit_mib == 64
    finally:
        confinement.release()
    assert not confinement.memory_cgroup.path.exists()


def test_without_a_cgroup_the_limit_is_an_address_space_limit(tmp_path: Path) -> None:
    not_a_cgroup = tmp_path / "not-a-cgroup"
    not_a_cgroup.mkdir()
    confinement = confine(
        node_folders(tmp_path), memory_mib=256, uid=os.geteuid(), cgroup_parent=not_a_cgroup
    )
    assert confinement.memory_cgroup is None
    assert confinement.address_space_limit == 256 * MIB
    assert "applied as RLIMIT_AS" in confinement.notes[0]
    assert "does not delegate the memory controller" in confinement.notes[0]
    code = run_wrapped(tmp_path, confinement, "hoard = bytearray(512 * 1024 * 1024)")
    assert code == 1
    tail = (tmp_path / "t.log").read_text()
    exhausted = confinement.out_of_memory(code, tail, None)
    assert exhausted is not None and exhausted.enforced_by == "RLIMIT_AS"
    assert confinement.out_of_memory(code, "ValueError: nothing to do with memory", None) is None


@ROOT_ONLY
def test_a_usable_uid_gets_output_and_metrics_and_only_reads_the_inputs(public: Path) -> None:
    folders = node_folders(public)
    confinement = confine(folders)
    assert confinement.uid == 1000, confinement.notes
    assert "the training runs as uid 1000 (group 1000, no other groups)" in confinement.notes[-1]
    assert folders.output.stat().st_uid == folders.metrics.stat().st_uid == 1000
    assert folders.dataset.stat().st_uid == 0
    assert confinement.wrapper_arguments() == ["--user", "1000", "--group", "1000"]


@ROOT_ONLY
def test_a_uid_that_cannot_reach_the_interpreter_is_not_used_and_the_init_log_says_why(
    public: Path,
) -> None:
    private = public / "private"
    private.mkdir(mode=0o700)
    interpreter = private / "python3"
    interpreter.symlink_to(SHELL)
    confinement = confine(node_folders(public), command=[str(interpreter), "train.py"])
    assert confinement.uid is None
    note = confinement.notes[-1]
    assert note.startswith("the training runs as uid 0 (root), not the task's uid 1000, because")
    assert f"{private} is not searchable by uid 1000" in note


@ROOT_ONLY
def test_a_command_found_elsewhere_on_the_path_by_the_uid_is_refused(public: Path) -> None:
    """As uid 1000, 'python3' would be another interpreter than the launcher's (without its
    packages): better root, said so, than a training failing for no visible reason."""
    private = public / "private"
    private.mkdir(mode=0o700)
    (private / "sh").symlink_to(SHELL)
    path = os.pathsep.join([str(private), str(Path(SHELL).parent)])
    confinement = confine(node_folders(public), command=["sh", "-c", "true"], path=path)
    assert confinement.uid is None
    assert f"'sh' would be {SHELL} instead of {private / 'sh'}" in confinement.notes[-1]


@ROOT_ONLY
def test_run_folders_the_uid_cannot_reach_keep_the_launcher_s_user(tmp_path: Path) -> None:
    """pytest's folders are private to root: a node there cannot run as uid 1000."""
    confinement = confine(node_folders(tmp_path))
    assert confinement.uid is None
    assert "is not searchable by uid 1000" in confinement.notes[-1]


def test_ma_user_has_no_uid_locally_and_the_init_log_says_so(tmp_path: Path) -> None:
    confinement = confine(node_folders(tmp_path), container_user="ma-user")
    assert confinement.uid is None
    assert "locally ma-user has no uid" in confinement.notes[-1]


def test_a_gpu_node_without_a_cgroup_gets_no_address_space_limit(tmp_path: Path) -> None:
    """CUDA reserves address space far beyond the memory it uses: RLIMIT_AS would break it."""
    not_a_cgroup = tmp_path / "not-a-cgroup"
    not_a_cgroup.mkdir()
    confinement = confine(
        node_folders(tmp_path), memory_mib=4096, gpu_count=1, uid=os.geteuid(),
        cgroup_parent=not_a_cgroup,
    )  # fmt: skip
    assert confinement.memory_cgroup is None and confinement.address_space_limit is None
    assert "no memory limit is applied" in confinement.notes[0]
    assert "RLIMIT_AS would break CUDA" in confinement.notes[0]
