"""The supplemental log's first line says why a node did not end normally, in words, the same
for both launchers; the run's message in the catalog carries it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from octotrain.abort_flags import AbortFlag
from octotrain.hang_detection import HungNode
from octotrain.supplemental_log import (
    MemoryExhaustion,
    NodeEnding,
    SupplementalLog,
    allocation_failed,
    explain,
    first_line,
    last_sampled_memory,
    run_message,
    staging_error_in,
)
from octotrain.time_limits import ReachedLimit

MIB = 1024 * 1024


def reason(ending: NodeEnding) -> str:
    log = explain(ending)
    assert log is not None
    return log.reason


def test_a_node_that_ended_normally_has_no_supplemental_log() -> None:
    assert explain(NodeEnding("single-0", exit_code=0)) is None


def test_line_one_is_the_reason_and_line_two_when_it_was_written() -> None:
    log = SupplementalLog("node single-0 failed with exit code 3", ("more",))
    text = log.render(datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert text == "node single-0 failed with exit code 3\nwritten 2025-01-02T03:04:05Z\nmore\n"
    assert first_line(text) == "node single-0 failed with exit code 3"


@pytest.mark.parametrize(
    ("ending", "words"),
    [
        (
            NodeEnding("single-0", exit_code=3),
            "node single-0 failed with exit code 3: the training program exited with an error",
        ),
        (
            NodeEnding("single-0", start_error="the OS refused its command: embedded null byte"),
            "node single-0 failed to start because the OS refused its command: embedded null byte",
        ),
        (
            NodeEnding("distributed-1", staging_error="checksum mismatch for a.csv"),
            "node distributed-1 did not start: staging failed because checksum mismatch for a.csv",
        ),
        (
            NodeEnding(
                "distributed-1",
                exit_code=137,
                stop_reason="node distributed-1 was stopped by alice",
                killed_after_grace_seconds=3,
            ),
            "node distributed-1 was stopped by alice; it ignored SIGTERM and was killed after "
            "the grace period of 3 s",
        ),
        (
            NodeEnding(
                "single-0",
                exit_code=137,
                out_of_memory=MemoryExhaustion(
                    limit_mib=128, enforced_by="memory cgroup", last_sample_bytes=120 * MIB
                ),
            ),
            "node single-0 ran out of memory: it used more than its memory limit of 128 MiB "
            "and was killed (memory cgroup, exit code 137); the last sample used 120 MiB",
        ),
        (
            NodeEnding(
                "single-0",
                exit_code=1,
                out_of_memory=MemoryExhaustion(limit_mib=128, enforced_by="RLIMIT_AS"),
            ),
            "node single-0 ran out of its memory limit of 128 MiB (RLIMIT_AS) and exited with "
            "exit code 1",
        ),
        (
            NodeEnding("single-0", exit_code=137, killed_after_grace_seconds=2),
            "node single-0 was stopped from outside Octotrain (SIGTERM); it ignored SIGTERM and "
            "was killed after the grace period of 2 s",
        ),
        (
            NodeEnding(
                "single-0",
                exit_code=137,
                killed_after_grace_seconds=5,
                time_limit=ReachedLimit("max_training_seconds", 60),
            ),
            "node single-0 reached its time limit: it trained for more than 60 s "
            "(max_training_seconds); it was sent SIGTERM and given the grace period to save a "
            "checkpoint; it ignored SIGTERM and was killed after the grace period of 5 s",
        ),
    ],
)
def test_the_first_line_says_why(ending: NodeEnding, words: str) -> None:
    assert reason(ending) == words


def test_a_stop_keeps_the_exit_status_as_a_detail() -> None:
    log = explain(NodeEnding("single-0", exit_code=143, stop_reason="node single-0 was stopped"))
    assert log is not None
    assert "exit code 143: terminated by SIGTERM" in "\n".join(log.details)


def test_a_forced_kill_is_not_taken_for_an_out_of_memory_kill() -> None:
    log = explain(
        NodeEnding(
            "single-0", exit_code=137, stop_reason="node single-0 was stopped by alice",
            killed_after_grace_seconds=10,
        )
    )  # fmt: skip
    assert log is not None
    assert "memory" not in log.render().lower()


@pytest.mark.parametrize(
    ("flag", "started", "words"),
    [
        (AbortFlag.stopped_by("alice"), True, "node distributed-1 was stopped by alice"),
        (
            AbortFlag.stopped_by("alice"),
            False,
            "node distributed-1 was not started: the run was stopped by alice",
        ),
        (
            AbortFlag.node_failed("distributed-0", "failed with exit code 3"),
            True,
            "node distributed-1 was stopped because node distributed-0 failed with exit code 3",
        ),
        (
            AbortFlag.node_failed("distributed-0", "failed with exit code 3"),
            False,
            "node distributed-1 was not started because node distributed-0 failed with exit code 3",
        ),
        (
            AbortFlag.stopped_by_airflow("distributed-1"),
            True,
            "node distributed-1 was stopped by Airflow (its task instance was stopped or timed "
            "out)",
        ),
        (
            AbortFlag.stopped_by_airflow("distributed-0"),
            True,
            "node distributed-1 was stopped because node distributed-0 was stopped by Airflow "
            "(its task instance was stopped or timed out)",
        ),
    ],
)
def test_a_stop_names_who_stopped_the_node(flag: AbortFlag, started: bool, words: str) -> None:
    assert flag.why_stopped("distributed-1", started=started) == words


def test_the_run_message_leads_with_the_node_that_ended_the_run() -> None:
    reasons = {
        "distributed-0": "node distributed-0 was stopped because node distributed-1 failed",
        "distributed-1": "node distributed-1 failed with exit code 3: an error",
    }
    message = run_message(reasons, culprit="distributed-1")
    assert message.startswith("node distributed-1 failed with exit code 3: an error")
    assert "nodes that did not succeed: distributed-0, distributed-1" in message
    assert run_message({"single-0": "node single-0 was stopped by alice"}) == (
        "node single-0 was stopped by alice"
    )


def test_a_long_run_message_names_a_few_nodes_and_counts_the_rest() -> None:
    reasons = {f"distributed-{n}": f"node distributed-{n} was stopped by alice" for n in range(64)}
    message = run_message(reasons)
    assert message.startswith("node distributed-0 was stopped by alice (nodes that did not")
    assert "distributed-7 and 56 more" in message and len(message) < 300


def test_the_staging_error_is_read_from_the_init_log() -> None:
    init = (
        "2025-01-01T00:00:00+0000 preparing node single-0\n"
        "2025-01-01T00:00:01+0000 ERROR staging failed: checksum mismatch for a.csv\n"
    )
    assert staging_error_in(init) == "checksum mismatch for a.csv"
    assert staging_error_in("2025-01-01T00:00:00+0000 data preparation finished\n") is None


@pytest.mark.parametrize(
    ("tail", "failed"),
    [
        ("Traceback (most recent call last):\n  ...\nMemoryError\n", True),
        ("terminate called after throwing an instance of 'std::bad_alloc'\n", True),
        ("OSError: [Errno 12] Cannot allocate memory\n", True),
        ("epoch 3 loss 0.2\nValueError: bad shape\n", False),
    ],
)
def test_a_failed_allocation_is_recognised_in_the_train_log(tail: str, failed: bool) -> None:
    assert allocation_failed(tail) is failed


def test_the_last_memory_sample_is_read_past_a_torn_line() -> None:
    samples = '{"timestamp": 1, "memory_bytes": 10}\n{"timestamp": 2, "memory_bytes": 20}\n{"time'
    assert last_sampled_memory(samples) == 20
    assert last_sampled_memory('{"timestamp": 1, "missing": ["psutil"]}\n') is None


@pytest.mark.parametrize(
    "ending",
    [
        NodeEnding("single-0", exit_code=0, time_limit=ReachedLimit("max_training_seconds", 60)),
        NodeEnding(
            "single-0", exit_code=122, hung=HungNode(silent_seconds=31, hang_after_seconds=30)
        ),
    ],
)
@pytest.mark.parametrize("synced", [True, False])
def test_resuming_is_suggested_only_when_a_checkpoint_was_synced(
    ending: NodeEnding, synced: bool
) -> None:
    log = explain(replace(ending, checkpoint_synced=synced))
    assert log is not None
    suggested = any("can be resumed from its last checkpoint" in line for line in log.details)
    assert suggested is synced
    assert any("cannot be resumed" in line for line in log.details) is not synced


def test_a_failed_node_s_log_ends_with_its_train_log_s_last_lines() -> None:
    """The manual's "error output": the last lines (bounded), after every detail."""
    lines = [f"step {n}" for n in range(40)] + ["", "Traceback: x" * 100]
    ending = NodeEnding("single-0", exit_code=1, train_log_tail="\n".join(lines) + "\n")
    log = explain(ending)
    assert log is not None
    rendered = log.render().splitlines()
    heading = rendered.index("the last lines of the train log:")
    quoted = rendered[heading + 1 :]
    assert len(quoted) == 20 and quoted[0] == "  | step 21"
    assert quoted[-1].startswith("  | Traceback: x") and quoted[-1].endswith(" …")
    assert len(quoted[-1]) <= 300 + 6
    assert explain(replace(ending, exit_code=0)) is None  # ended well: no log at all
    never_ran = explain(NodeEnding("single-0", start_error="no such file", train_log_tail="x"))
    assert never_ran is not None and never_ran.tail == ()


def test_the_quoted_tail_drops_a_first_line_cut_by_the_read() -> None:
    from octotrain.supplemental_log import TAIL_READ_BYTES, quoted_tail

    cut = "x" * (TAIL_READ_BYTES - 10) + "\nlast line\n"
    assert quoted_tail(cut)[1:] == ("  | last line",)
    assert quoted_tail("only line") == ("the last lines of the train log:", "  | only line")
    assert quoted_tail("\n\n") == ()


def test_secret_values_are_masked_in_text() -> None:
    from octotrain.secrets import masked_text

    assert masked_text("token=abc123 and abc", ["abc", "abc123", ""]) == "token=*** and ***"
