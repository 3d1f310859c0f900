"""Benchmark: task logs on a 1 GiB train log, on the local backend and on S3 (a real S3 server:
Ceph's radosgw on a single-node cluster on 127.0.0.1, ``tests/radosgw.py``), each against a
baseline of the same run:

- the last 200 lines, and pages at random offsets (back and forward): milliseconds, on the
  1 GiB file and on a 1 MiB one (goal ≤ 50 ms, the same for both sizes);
- numbering a page's lines (``first_line``): the first page of the file counts its newlines
  (against ``wc -l`` on the same file), a later one reads at most one mark's span (goal
  ≤ 50 ms);
- search for a rare keyword over the whole file (case-insensitive literal, the default):
  throughput against ``grep -F -c`` (and ``grep -F -i -c``) on the same file (goal ≥ 0.5x on
  the local backend; on S3 the goal is against boto3, below);
- download of the file, and the zip of the run's logs, in a process of their own: peak RSS
  (goal < 100 MB) and throughput against a plain file copy (``shutil.copyfile``);
- on S3, against boto3 alone: a page of the 1 GiB log against one 64 KiB ranged GET (goal
  ≤ 1.5x), search against reading the whole object (goal ≥ 0.8x). Each is measured in turns
  with its boto3 baseline, so that the server's speed drifting meanwhile (it shares this
  machine) touches both sides alike.

    uv run python -m bench.logs [--mib 1024] [--backends local,s3]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

from bench.staging import s3_server
from hooks.runs.log_search import search
from hooks.runs.run_files import StoreRunFiles
from hooks.runs.run_logs import RunLogs
from hooks.storage.local_store import LocalFolderStore
from hooks.storage.s3_store import S3Store
from octotrain.contracts import NodeLogNames
from octotrain.log_search import SearchQuery
from octotrain.log_text import page_after, page_before, tail
from octotrain.run_layout import RunLayout
from octotrain.storage import ObjectStore
from tests.radosgw import S3Endpoint

MIB = 1024 * 1024
GIB = 1024 * MIB
RARE = "GradientOverflowDetected"
NODE = "single-0"
LAYOUT = RunLayout(Path("/nonexistent-run-folder"), 1, "manual__bench-logs")
NAME = NodeLogNames(1, NODE).train


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def write_log(path: Path, size: int) -> None:
    """Lines as a training loop prints them (timestamps, levels, metrics), the rare keyword
    once at 90% of the file."""
    rng = random.Random(7)
    written, step, rare_at = 0, 0, int(size * 0.9)
    with path.open("w", encoding="utf-8") as out:
        while written < size:
            lines = []
            for _ in range(20_000):
                step += 1
                level = "WARNING" if step % 997 == 0 else "INFO"
                lines.append(
                    f"2026-12-02 10:{step // 60000 % 60:02d}:{step // 1000 % 60:02d},"
                    f"{step % 1000:03d} {level} [rank 0] epoch {step // 10000} step {step} "
                    f"loss={rng.random():.6f} acc={rng.random():.4f} lr=1.0e-04 "
                    f"throughput={rng.uniform(900, 1300):.1f} samples/s\n"
                )
            if written <= rare_at < written + sum(map(len, lines)):
                lines.insert(len(lines) // 2, f"ERROR {RARE}: scaling loss down at step {step}\n")
            block = "".join(lines)
            out.write(block)
            written += len(block)


def in_turns(
    action: Callable[[], object], baseline: Callable[[], object] | None, repeat: int
) -> tuple[float, float]:
    """The median seconds of ``action`` and of ``baseline`` (0 without one), called in turns
    ``repeat`` times each."""
    measured = [action, baseline] if baseline else [action]
    samples: list[list[float]] = [[] for _ in measured]
    for _ in range(repeat):
        for call, times in zip(measured, samples, strict=True):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
    medians = [statistics.median(times) for times in samples]
    return medians[0], (medians[1] if baseline else 0.0)


def page_figures(
    logs: RunLogs, label: str, ranged_get: Callable[[], object] | None
) -> list[tuple[str, float, float]]:
    """Each page's milliseconds, and those of ``ranged_get`` (boto3 alone) taken in turns."""
    log = logs.file(NAME)
    rng = random.Random(1)

    def read(page: Callable[..., object]) -> Callable[[], object]:
        def action() -> object:
            source = logs.ranges(log)
            try:
                return page(source)
            finally:
                source.close()

        return action

    size = log.size
    pages = {
        f"tail 200 lines, {label}": lambda s: tail(s, 200),
        f"page back at random, {label}": lambda s: page_before(s, rng.randrange(size), 200),
        f"page forward at random, {label}": lambda s: page_after(s, rng.randrange(size), 200),
    }
    return [
        (name, *(seconds * 1000 for seconds in in_turns(read(page), ranged_get, 30)))
        for name, page in pages.items()
    ]


def numbering_figures(logs: RunLogs) -> tuple[float, float]:
    """Numbering a page's lines: the first page of the file (its newlines counted up to the
    page: the whole file for its tail) in seconds, then any later page in milliseconds (the
    median of pages at random offsets: at most one mark's span read)."""
    log = logs.file(NAME)
    rng = random.Random(2)

    def number(offset: int) -> float:
        source = logs.ranges(log)
        try:
            started = time.perf_counter()
            logs.line_number(log, source, offset)
            return time.perf_counter() - started
        finally:
            source.close()

    first = number(log.size)
    later = statistics.median(number(rng.randrange(log.size)) for _ in range(30))
    return first, later * 1000


def wc_seconds(path: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["wc", "-l", str(path)], check=True, capture_output=True)
    return time.perf_counter() - started


def search_seconds(logs: RunLogs) -> float:
    query = SearchQuery(RARE.lower(), context=2)
    started = time.perf_counter()
    result = search(logs, [logs.file(NAME)], query)
    assert len(result.hits) == 1, result.hits
    return time.perf_counter() - started


def grep_seconds(path: Path, *flags: str) -> float:
    started = time.perf_counter()
    subprocess.run(["grep", *flags, "-c", RARE, str(path)], check=True, capture_output=True)
    return time.perf_counter() - started


def child(arguments: argparse.Namespace) -> None:
    """Stream the file (or the run's zip) to ``--out`` in this process: its peak RSS."""
    store = open_store(arguments.child_store, Path(arguments.out).parent)
    logs = RunLogs(StoreRunFiles(store, LAYOUT.objects), [NODE])
    before = rss_mib()
    started = time.perf_counter()
    chunks = logs.zip_chunks() if arguments.child == "zip" else logs.chunks(logs.file(NAME))
    with open(arguments.out, "wb") as out:
        for chunk in chunks:
            out.write(chunk)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak_mib": rss_mib("VmHWM"), "before_mib": before}))


def rss_mib(field: str = "VmRSS") -> float:
    """This process's resident memory now (or its peak, ``VmHWM``), which, unlike
    ``ru_maxrss``, does not carry over the parent's across fork and exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_store(spec: str, root: Path) -> ObjectStore:
    """``local:<folder>`` or ``s3:<the endpoint's fields as JSON>``."""
    kind, _, where = spec.partition(":")
    if kind == "local":
        return LocalFolderStore(Path(where))
    endpoint = S3Endpoint(**json.loads(where))
    return S3Store(client=endpoint.client(), bucket="bench", prefix="o")


def streamed(spec: str, what: str, out: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.logs", "--child", what, "--child-store", spec,
         "--out", str(out)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    out.unlink()
    return json.loads(done.stdout.strip().splitlines()[-1])


def boto3_alone(endpoint: S3Endpoint) -> dict[str, Callable[[], object]]:
    """What the S3 server itself costs, with boto3 alone: one 64 KiB ranged GET at the end of
    the big object (``ranged``), and reading the whole of it (``whole``)."""
    client = endpoint.client()
    big = f"o/{LAYOUT.objects.log(NAME)}"

    def ranged() -> None:
        client.get_object(Bucket="bench", Key=big, Range="bytes=-65536")["Body"].read()

    def whole() -> None:
        for _chunk in client.get_object(Bucket="bench", Key=big)["Body"].iter_chunks(1 << 20):
            pass

    return {"ranged": ranged, "whole": whole}


def run_backend(backend: str, size: int, root: Path, source: Path, small: Path) -> None:
    server = s3_server(memory_bytes=size + GIB) if backend == "s3" else nullcontext()
    with server as endpoint:
        if endpoint is not None:
            endpoint.client().create_bucket(Bucket="bench")
            fields = {"url": endpoint.url, "access_key": endpoint.access_key,
                      "secret_key": endpoint.secret_key}  # fmt: skip
            spec = f"s3:{json.dumps(fields)}"
        else:
            spec = f"local:{root / 'objects'}"
        store = open_store(spec, root)
        store.put_file(LAYOUT.objects.log(NAME), source)
        small_layout = RunLayout(LAYOUT.runs_dir, 2, LAYOUT.run_key)
        store.put_file(small_layout.objects.log(NodeLogNames(2, NODE).train), small)
        logs = RunLogs(StoreRunFiles(store, LAYOUT.objects), [NODE])
        small_logs = RunLogs(StoreRunFiles(store, small_layout.objects), [NODE])
        small_logs.file = lambda name: RunLogs.file(small_logs, NodeLogNames(2, NODE).train)  # type: ignore[method-assign]
        print(f"\n{backend}: {size / MIB:.0f} MiB train log")
        alone = boto3_alone(endpoint) if endpoint else {}
        big = page_figures(logs, "1 GiB", alone.get("ranged"))
        little = page_figures(small_logs, "1 MiB", None)  # against the 1 GiB file's pages
        for (label, ms, ranged_ms), (_, small_ms, _) in zip(big, little, strict=True):
            print(f"  {label:<36}{ms:>9.2f} ms   1 MiB file {small_ms:6.2f} ms   "
                  f"ratio {ms / small_ms:5.2f}x   goal ≤ 50 ms: {verdict(ms <= 50)}")  # fmt: skip
            if ranged_ms:
                print(f"  {'':<36}against one ranged GET ({ranged_ms:.2f} ms, in turns) "
                      f"{ms / ranged_ms:5.2f}x   goal ≤ 1.5x: "
                      f"{verdict(ms <= 1.5 * ranged_ms)}")  # fmt: skip
        first, later_ms = numbering_figures(logs)
        counted = statistics.median(wc_seconds(source) for _ in range(3))
        print(
            f"  number a page's lines, the first time   {first:8.3f} s  (the file's newlines "
            f"counted once)   wc -l (baseline) {counted:6.3f} s  ratio {counted / first:5.2f}x"
        )
        print(f"  number a page's lines, later pages  {later_ms:9.2f} ms   goal ≤ 50 ms: "
              f"{verdict(later_ms <= 50)}")  # fmt: skip
        search_seconds(logs)  # warm: the page cache holds the file for both sides
        ours, whole_seconds = in_turns(lambda: search_seconds(logs), alone.get("whole"), 5)
        plain = statistics.median(grep_seconds(source, "-F") for _ in range(3))
        folded = statistics.median(grep_seconds(source, "-F", "-i") for _ in range(3))
        rate = size / MIB / ours
        print(f"  search rare keyword (case-insensitive) {ours:8.3f} s  {rate:7.0f} MiB/s")
        # The goal against grep is the local backend's; on S3 it is against boto3 (below).
        goal = f"   goal ≥ 0.5x: {verdict(plain / ours >= 0.5)}" if backend == "local" else ""
        print(f"  grep -F -c (baseline)                  {plain:8.3f} s  ratio "
              f"{plain / ours:5.2f}x{goal}")  # fmt: skip
        print(f"  grep -F -i -c                          {folded:8.3f} s  "
              f"ratio {folded / ours:5.2f}x")  # fmt: skip
        if whole_seconds:
            print(f"  boto3 streaming the object (in turns)  {whole_seconds:8.3f} s  ratio "
                  f"{whole_seconds / ours:5.2f}x   goal ≥ 0.8x: "
                  f"{verdict(whole_seconds / ours >= 0.8)}")  # fmt: skip
        started = time.perf_counter()
        shutil.copyfile(source, root / "copy.log")
        copy = time.perf_counter() - started
        (root / "copy.log").unlink()
        for what in ("file", "zip"):
            figures = streamed(spec, what, root / f"download.{what}")
            seconds, peak = figures["seconds"], figures["peak_mib"]
            print(f"  download {what:<4} {seconds:8.3f} s  {size / MIB / seconds:6.0f} MiB/s  "
                  f"vs copy {copy:6.3f} s ratio {copy / seconds:5.2f}x   peak RSS {peak:5.0f} MiB "
                  f"(before streaming {figures['before_mib']:.0f})   goal < 100 MB: "
                  f"{verdict(peak * MIB < 100e6)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="size of the big log")
    parser.add_argument("--backends", default="local,s3")
    parser.add_argument("--child", choices=["file", "zip"], help=argparse.SUPPRESS)
    parser.add_argument("--child-store", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(arguments)
        return
    with tempfile.TemporaryDirectory(prefix="octotrain-bench-logs-") as scratch:
        root = Path(scratch)
        source, small = root / "train.log", root / "small.log"
        write_log(source, arguments.mib * MIB)
        write_log(small, MIB)
        for backend in arguments.backends.split(","):
            run_backend(backend, source.stat().st_size, root, source, small)


if __name__ == "__main__":
    main()
