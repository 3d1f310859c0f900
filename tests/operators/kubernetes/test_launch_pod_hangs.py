"""A task's hang detection reaches each node pod's wrapper, from the task document through the
run's plan; off, the wrapper is told nothing."""

from __future__ import annotations

from sqlalchemy.orm import Session

from tests.operators.kubernetes.test_launch_pod import CPU_TASK, containers, plan_of, pods


def test_the_pod_s_wrapper_watches_for_hangs_as_its_task_says(rule_session: Session) -> None:
    document = CPU_TASK | {"hang_detection": {"after_seconds": 900, "stop_when_hung": True}}
    for pod in pods(plan_of(rule_session, document, 2)):
        command = containers(pod)["base"]["command"]
        wrapper = command[: command.index("--")]
        assert wrapper[wrapper.index("--hang-after-seconds") + 1] == "900"
        assert "--stop-when-hung" in wrapper
    reported = CPU_TASK | {"name": "reported", "hang_detection": {"after_seconds": 900}}
    command = containers(pods(plan_of(rule_session, reported, 1))[0])["base"]["command"]
    assert "--hang-after-seconds" in command and "--stop-when-hung" not in command
    unwatched = containers(pods(plan_of(rule_session, CPU_TASK | {"name": "off"}, 1))[0])
    assert "--hang-after-seconds" not in unwatched["base"]["command"]
