"""A real S3 server for the tests and benchmarks: Ceph's S3 gateway (radosgw) on a single-node
cluster of its own (one monitor, one OSD keeping its data in RAM), on 127.0.0.1 only.

Moto, the S3 mock, is Python answering as S3 would (it reads a whole object for each ranged
GET), so what passes or runs fast against it says little about MinIO or S3. Debian's ``radosgw``,
``ceph-mon`` and ``ceph-osd`` packages give a widely deployed S3 implementation that starts
from nothing in about 15 s. Everything the cluster writes stays in its own folder; every
process it starts is stopped when the context ends, also when starting fails midway.

Choices that make one node on loopback work: no authentication (``auth ... = none``) but the
messenger's modes set to ``crc`` (otherwise radosgw fails to authenticate to the monitor with
-13), pools of one replica, CRUSH placing replicas across OSDs rather than hosts, small
placement-group counts, and deleted objects' space given back at once (``rgw gc``), so that a
benchmark can delete what it wrote and stay within ``memory_bytes``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from hooks.local.local_process import free_port

PACKAGES = {"ceph-mon": "ceph-mon", "ceph-osd": "ceph-osd", "radosgw": "radosgw"}
INSTALL_HINT = "apt-get install -y radosgw ceph-mon ceph-osd"
START_SECONDS = 90.0  # the whole cluster; about 15 s on an idle 2-core machine
# A daemon that still runs this long after SIGTERM is killed: the cluster is thrown away with
# its data (in memory), and one of its daemons always waits out a longer grace (10 s: 10.0 s).
STOP_SECONDS = 2.0
COMMAND_SECONDS = 60
GIB = 1024**3


class ClusterFailed(RuntimeError):
    """The cluster could not be started; the message carries the daemons' last log lines."""


@dataclass(frozen=True)
class S3Endpoint:
    """Where the gateway answers, and the keys of the user created for the caller."""

    url: str
    access_key: str
    secret_key: str
    region: str = "us-east-1"
    folder: Path = Path()

    def client(self) -> object:
        """A plain boto3 S3 client of this endpoint (path-style addressing, as for MinIO)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            region_name=self.region,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            config=Config(s3={"addressing_style": "path"}, max_pool_connections=32),
        )

    def collect_garbage(self) -> None:
        """Free the RAM of deleted objects now (radosgw otherwise frees it in the background)."""
        _command(self.folder, "radosgw-admin", "gc", "process", "--include-all")


def missing_packages() -> list[str]:
    """The Debian packages whose programs are not on PATH."""
    return sorted({package for program, package in PACKAGES.items() if not shutil.which(program)})


def _config(folder: Path, fsid: str, mon_port: int, rgw_port: int, memory_bytes: int) -> str:
    crc = "\n".join(
        f"ms {kind} mode = crc"
        for kind in (
            "cluster",
            "service",
            "client",
            "mon cluster",
            "mon service",
            "mon client",
        )
    )
    return f"""[global]
fsid = {fsid}
mon host = v2:127.0.0.1:{mon_port}
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
{crc}
keyring = {folder}/keyring
run dir = {folder}/run
admin socket = {folder}/run/$name.asok
log file = {folder}/log/$name.log
crash dir = {folder}/crash
log to stderr = false
err to stderr = false
mon data = {folder}/mon
mon data avail crit = 1
mon data avail warn = 2
mon allow pool size one = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
osd data = {folder}/osd
osd objectstore = memstore
memstore device bytes = {memory_bytes}
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
rgw frontends = beast endpoint=127.0.0.1:{rgw_port}
rgw data = {folder}/rgw
rgw thread pool size = 64
rgw gc obj min wait = 0
rgw gc processor period = 5
rgw enable usage log = false
"""


def _log_tails(folder: Path, lines: int = 15) -> str:
    tails = []
    for log in sorted((folder / "log").glob("*.log")):
        text = log.read_text(errors="replace").splitlines()[-lines:]
        tails.append(f"--- {log.name}\n" + "\n".join(text))
    return "\n".join(tails)


def _command(folder: Path, *argv: str) -> str:
    """Run a Ceph command-line tool against the cluster; its stdout."""
    done = subprocess.run(
        [*argv, "-c", str(folder / "ceph.conf")],
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise ClusterFailed(
            f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.strip()[-2000:]}\n"
            + _log_tails(folder)
        )
    return done.stdout


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to every daemon at once, then SIGKILL to those still up after STOP_SECONDS: no
    daemon outlives its cluster, and none waits for another to go first (its data is in
    memory, thrown away with it)."""
    running = [process for process in processes if process.poll() is None]
    for process in running:
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    for process in running:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _poll(what: str, ready: Callable[[], bool], deadline: float, folder: Path) -> None:
    while not ready():
        if time.monotonic() > deadline:
            late = f"{what} not ready after {START_SECONDS:.0f} s\n"
            raise ClusterFailed(late + _log_tails(folder))
        time.sleep(0.2)


@contextmanager
def radosgw_cluster(folder: Path, *, memory_bytes: int = GIB) -> Iterator[S3Endpoint]:
    """Start a monitor, an OSD of ``memory_bytes`` in RAM and the gateway in ``folder`` (which
    must be empty or absent), create an S3 user, and yield its endpoint; stop them all after."""
    missing = missing_packages()
    if missing:
        raise ClusterFailed(f"Ceph's packages are missing ({', '.join(missing)}): {INSTALL_HINT}")
    folder.mkdir(parents=True, exist_ok=True)
    for part in ("run", "log", "crash", "mon", "osd", "rgw"):
        (folder / part).mkdir()
    (folder / "keyring").touch()
    fsid = str(uuid.uuid4())
    mon_port, rgw_port = free_port(), free_port()
    conf = folder / "ceph.conf"
    conf.write_text(_config(folder, fsid, mon_port, rgw_port, memory_bytes))
    deadline = time.monotonic() + START_SECONDS
    with ExitStack() as daemons:
        started: list[subprocess.Popen[bytes]] = []
        daemons.callback(_stop, started)

        def start(*argv: str) -> subprocess.Popen[bytes]:
            process = subprocess.Popen(
                [*argv, "-f", "-c", str(conf)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            started.append(process)
            return process

        _command(folder, "monmaptool", "--create", "--fsid", fsid,
                 "--addv", "a", f"[v2:127.0.0.1:{mon_port}]", str(folder / "monmap"))  # fmt: skip
        _command(folder, "ceph-mon", "--mkfs", "-i", "a", "--monmap", str(folder / "monmap"))
        start("ceph-mon", "-i", "a")
        osd_uuid = str(uuid.uuid4())
        osd_id = _command(folder, "ceph", "--connect-timeout", "30", "osd", "new", osd_uuid)
        _command(folder, "ceph-osd", "-i", osd_id.strip(), "--mkfs", "--osd-uuid", osd_uuid)
        start("ceph-osd", "-i", osd_id.strip())
        gateway = start("radosgw", "-n", "client.rgw")

        def answers() -> bool:
            if gateway.poll() is not None:
                exited = f"radosgw exited with {gateway.returncode}\n"
                raise ClusterFailed(exited + _log_tails(folder))
            try:
                httpx.get(f"http://127.0.0.1:{rgw_port}", timeout=2)
            except httpx.TransportError:
                return False
            return True

        _poll("radosgw", answers, deadline, folder)
        access, secret = uuid.uuid4().hex[:20].upper(), uuid.uuid4().hex
        _command(folder, "radosgw-admin", "user", "create", "--uid", "octotrain",
                 "--display-name", "Octotrain tests", "--access-key", access,
                 "--secret", secret)  # fmt: skip
        yield S3Endpoint(f"http://127.0.0.1:{rgw_port}", access, secret, folder=folder)


def pids_in(folder: Path) -> list[int]:
    """Processes whose command line names ``folder`` (the cluster's config is inside it): what
    a test checks is empty once the cluster has stopped."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(folder) in command:
            found.append(int(entry.name))
    return found
