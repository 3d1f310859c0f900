"""Benchmark: metric definitions extracted from a train log (``agent/log_metrics.py``).

- throughput: a log of a million lines (one in ten a metric line, matched by two definitions:
  a loss and an accuracy), read in the wrapper's 1 MiB pieces by ``LogMetricsExtractor``:
  lines/s, against ``grep -E -c`` with the same two regexes on the same file (the ratio);
- keeping up: a training (a process of its own) writing 50,000 lines/s for 10 s, followed live
  by ``LogMetricsFollower`` as the node wrapper does: every point extracted, and how long the
  extraction still had to run once the training ended (its lag; goal under a second).

    uv run python -m bench.extract [--lines 1000000] [--rate 50000] [--seconds 10]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from agent.log_metrics import READ_BYTES, LogMetricsExtractor, LogMetricsFollower
from octotrain.metric_definitions import MetricDefinition

DEFINITIONS = [
    {"name": "loss", "regex": r"loss=([0-9.e-]+)"},
    {"name": "accuracy", "regex": r"acc=(?P<acc>[0-9.]+)", "ys": ["acc"]},
]
NOISE = "2026-12-03 12:00:00 INFO data loader: batch of 256 samples read in 0.031 s\n"
METRIC = "2026-12-03 12:00:00 INFO \x1b[32mstep {n}\x1b[0m loss={loss:.6f} acc=0.{n}\r\n"
# What the node wrapper uses (agent/run_training.py METRIC_EXTRACTION_SECONDS).
FOLLOW_SECONDS = 0.5
# The training of "keeping up": writes its lines in batches, ten a second, at the given rate.
TRAINING = textwrap.dedent(
    """
    import sys, time
    path, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    noise, metric = sys.argv[4], sys.argv[5]
    batch, n, start = rate // 10, 0, time.monotonic()
    with open(path, "a", encoding="utf-8") as log:
        for tick in range(int(seconds * 10)):
            lines = []
            for _ in range(batch):
                n += 1
                lines.append(metric.format(n=n, loss=1 / n) if n % 10 == 0 else noise)
            log.write("".join(lines))
            log.flush()
            time.sleep(max(0.0, start + (tick + 1) / 10 - time.monotonic()))
    print(n)
    """
)


def extraction() -> list[dict[str, object]]:
    return [MetricDefinition.model_validate(item).extraction() for item in DEFINITIONS]


def write_log(path: Path, lines: int) -> None:
    with path.open("w", encoding="utf-8") as log:
        for n in range(1, lines + 1):
            log.write(METRIC.format(n=n, loss=1 / n) if n % 10 == 0 else NOISE)


def extraction_seconds(log: Path, metrics: Path) -> tuple[float, float]:
    """Wall and CPU seconds (CPU too: on a busy machine wall time measures the neighbours)."""
    extractor = LogMetricsExtractor(metrics, extraction(), task_id="bench")
    started, cpu = time.perf_counter(), time.process_time()
    with log.open("rb") as handle:
        while chunk := handle.read(READ_BYTES):
            extractor.feed(chunk)
    extractor.finish()
    return time.perf_counter() - started, time.process_time() - cpu


def grep_seconds(log: Path) -> tuple[float, float]:
    patterns = [option for item in DEFINITIONS for option in ("-e", str(item["regex"]))]
    patterns = [pattern.replace("(?P<acc>", "(") for pattern in patterns]  # POSIX ERE
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(["grep", "-E", "-c", *patterns, str(log)], check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def points(metrics: Path, chart: str) -> int:
    with (metrics / f"{chart}.jsonl").open("rb") as handle:
        return sum(1 for _ in handle)


def throughput(folder: Path, lines: int) -> None:
    log = folder / "train.log"
    write_log(log, lines)
    size_mib = log.stat().st_size / 2**20
    ours = [extraction_seconds(log, folder / f"metrics-{n}") for n in range(3)]
    grep = [grep_seconds(log) for _ in range(3)]
    assert points(folder / "metrics-0", "loss") == lines // 10
    print(f"throughput: {lines:,} lines ({size_mib:.0f} MiB), 2 definitions, best of 3")
    for label, index in (("wall", 0), ("CPU", 1)):
        mine = min(measure[index] for measure in ours)
        theirs = max(min(measure[index] for measure in grep), 1e-3)  # rusage ticks
        print(
            f"  {label:<4} extraction {lines / mine:>12,.0f} lines/s ({mine:.2f} s), "
            f"grep -E -c {lines / theirs:>12,.0f} lines/s ({theirs:.2f} s): "
            f"{theirs / mine:.3f}x grep, {lines / mine / 50_000:.1f}x 50,000 lines/s"
        )


def keeping_up(folder: Path, rate: int, seconds: float) -> None:
    log = folder / "live.log"
    log.touch()
    metrics = folder / "live-metrics"
    follower = LogMetricsFollower(
        log, LogMetricsExtractor(metrics, extraction(), "bench"), FOLLOW_SECONDS
    )
    follower.start()
    started = time.perf_counter()
    training = subprocess.run(
        [sys.executable, "-c", TRAINING, str(log), str(rate), str(seconds), NOISE, METRIC],
        check=True,
        capture_output=True,
        text=True,
    )
    trained = time.perf_counter() - started
    follower.stop()
    lag = time.perf_counter() - started - trained
    written = int(training.stdout)
    extracted = points(metrics, "loss")
    print(f"keeping up: a training writing {rate:,} lines/s for {seconds:g} s, followed live")
    print(f"  written      {written:,} lines in {trained:.1f} s ({written / trained:,.0f}/s)")
    print(f"  extracted    {extracted:,} of {written // 10:,} loss points")
    print(f"  lag at end   {lag:.2f} s (the follower reads every {FOLLOW_SECONDS:g} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=50_000)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-extract-") as folder:
        throughput(Path(folder), args.lines)
        keeping_up(Path(folder), args.rate, args.seconds)


if __name__ == "__main__":
    main()
