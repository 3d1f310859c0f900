"""The task page, its form and a run's page as the server renders them: every parameter with
the value a run gets (defaults marked), the environment with secrets masked, the wording of
the training kind, the run's settings, outcome and links, and each page only for members."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

from sqlalchemy import select

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import (
    ModelRepository,
    ModelVersion,
    ModelVersionSource,
    ModelVersionStatus,
    Run,
    RunState,
)
from octotrain.contracts import dag_id_for
from tests.factories import VALID_TASK
from tests.plan_rows import recorded
from tests.plugins.api.conftest import Api

CHOICE_ALGORITHM = {
    "name": "choice-training",
    "image": "python:3.11-slim",
    "command": ["python", "-c", "print('trained')"],
    "sample_type": "table",
    "parameters": [
        {"name": "shuffle", "type": "bool", "default": False},
        {"name": "optimizer", "type": "enum", "choices": ["sgd", "adam"], "default": "sgd"},
        {"name": "epochs", "type": "int", "min": 1, "max": 50, "default": 5},
    ],
    "env": {"API_TOKEN": "from-the-algorithm", "MODE": "fast"},
}


def _task_with_choices(api: Api, name: str, **document: object) -> dict[str, object]:
    """A task ``name`` of the algorithm with bool, enum and int parameters (made once)."""
    alice = api.as_user("alice")
    made = api.client.post("/api/v1/projects/demo/algorithms", json=CHOICE_ALGORITHM, headers=alice)
    assert made.status_code == 201 or "already exists" in made.text, made.text
    task = api.client.post(
        "/api/v1/tasks",
        json=VALID_TASK | {"name": name, "algorithm": "choice-training"} | document,
        headers=alice,
    )
    assert task.status_code == 201, task.text
    return task.json()


def test_the_task_page_shows_defaults_environment_and_the_training_in_words(api: Api) -> None:
    task = _task_with_choices(
        api,
        "defaults-task",
        parameters={"epochs": 7},
        env={"MODE": "careful", "API_TOKEN": "hunter2"},
    )
    page = api.client.get(f"/ui/tasks/{task['id']}", headers=api.as_user("alice")).text
    parameters = re.search(r'<dd id="task-parameters">(.*?)</dd>', page, re.S).group(1)
    assert 'shuffle=false</code><span class="muted"> (default)' in parameters
    assert 'optimizer="sgd"</code><span class="muted"> (default)' in parameters
    assert "epochs=7</code> " in parameters  # set by the task: not marked
    env = re.search(r'<dd id="task-env">(.*?)</dd>', page, re.S).group(1)
    assert "MODE=careful" in env and "API_TOKEN=***" in env
    assert "hunter2" not in page and "from-the-algorithm" not in page  # nor in the script's copy
    assert "regular training into house-price-model" in page
    assert 'id="task-mounts">—' in page


def test_the_task_page_and_its_form_show_its_limits_and_restarts(api: Api) -> None:
    limits = {"max_wait_seconds": 900, "max_node_restarts": 0,
              "hang_detection": {"after_seconds": 120, "stop_when_hung": False}}  # fmt: skip
    task = _task_with_choices(api, "limits-task", **limits)
    alice = api.as_user("alice")
    page = api.client.get(f"/ui/tasks/{task['id']}", headers=alice).text
    shown = re.search(r'<dd id="task-limits">(.*?)</dd>', page, re.S).group(1)
    assert shown == (
        "wait for resources 900 s · training no limit · restarts after a lost node 0 · "
        "hung when silent 120 s, reported"
    )
    form = api.client.get(f"/ui/tasks/{task['id']}/edit", headers=alice).text
    for name in ("max_wait_seconds", "max_training_seconds", "max_node_restarts",
                 "hang_after_seconds", "stop_when_hung"):  # fmt: skip
        assert f'name="{name}"' in form, name
    assert 'data-error-for="hang_detection"' in form


def test_incremental_training_names_its_input_and_its_repository_once_each(api: Api) -> None:
    with default_catalog().session() as session:
        repository = session.scalars(
            select(ModelRepository).where(ModelRepository.name == "house-price-model")
        ).one()
        number = 1 + max((item.version for item in repository.versions), default=0)
        version = ModelVersion(
            repository_id=repository.id,
            version=number,
            status=ModelVersionStatus.COMPLETE,
            source=ModelVersionSource.IMPORTED,
            object_prefix=f"models/x/{number}",
        )
        session.add(version)
    alice = api.as_user("alice")
    task = api.client.post(
        "/api/v1/tasks",
        json=VALID_TASK | {"name": "incremental-task", "training_kind": "incremental",
                           "input_models": [{"repository": "house-price-model",
                                             "version": number}]},
        headers=alice,
    )  # fmt: skip
    assert task.status_code == 201, task.text
    page = api.client.get(f"/ui/tasks/{task.json()['id']}", headers=alice).text
    training = re.search(r'<dd id="task-training">(.*?)</dd>', page, re.S).group(1)
    assert training == (
        f"incremental training from <code>house-price-model v{number}</code> into house-price-model"
    )


def test_the_form_offers_each_data_inputs_status_and_cuts_nothing(api: Api) -> None:
    page = api.client.get(
        "/ui/tasks/new", params={"project": "demo"}, headers=api.as_user("alice")
    ).text
    choices = json.loads(
        re.search(r'<script type="application/json" id="choices">(.*?)</script>', page).group(1)
    )
    datasets = {item["name"]: item for item in choices["datasets"]}
    assert datasets["house-prices"]["version_statuses"] == {"v1": "published"}
    assert all("status" in cache for cache in choices["caches"])
    assert "maxlength" not in page  # a value over its limit is refused with its rule, not cut
    assert 'data-count-for="name" data-max="64"' in page


def test_a_runs_page_shows_its_settings_outcome_and_links(api: Api) -> None:
    task = _task_with_choices(api, "failed-run-task")
    plan = recorded(**{
        "node_indices": ["distributed-0"],
        "priority": 3,
        "parameters": {"shuffle": True, "optimizer": "adam", "epochs": 5},
        "env": {"API_TOKEN": "***", "MODE": "fast"},
        "resources": {"spec": "cpu-small", "kind": "cce", "cpu": 1.0, "memory_mib": 1024,
                      "gpu_count": 0, "gpu_type": ""},
        "image": "python:3.11-slim",
        "command": ["python", "-c", "print('trained')"],
        "lineage": {"data_inputs": [{"dataset": "house-prices", "version": "v1"}],
                    "input_models": [], "mounts": []},
    })  # fmt: skip
    airflow_run_id = "manual__2026-05-04T10:00:00+00:00"
    with default_catalog().session() as session:
        run = Run(task_id=task["id"], airflow_run_id=airflow_run_id, state=RunState.FAILED,
                  node_count=1, plan=plan, triggered_by="alice", trigger="manual",
                  message="node distributed-0 ran out of memory (<1 GiB>)")  # fmt: skip
        session.add(run)
        session.flush()
        run_id = run.id
    alice = api.as_user("alice")
    page = api.client.get(f"/ui/tasks/{task['id']}/runs/{run_id}", headers=alice)
    assert page.status_code == 200
    text = page.text
    assert "Why it failed:</strong> node distributed-0 ran out of memory (&lt;1 GiB&gt;)" in text
    assert "shuffle=true" in text and 'optimizer="adam"' in text
    assert "API_TOKEN=***" in text and "house-prices v1" in text
    assert "cpu-small" in text and "a run that does not succeed archives no model" in text
    dag_run = f"/dags/{dag_id_for(task['id'])}/runs/{quote(airflow_run_id, safe='')}"
    for tab in ("metrics", "resources", "logs"):
        assert f'<a target="_top" href="{dag_run}/plugin/octotrain-{tab}">' in text
    assert f'<a target="_top" href="{dag_run}" id="dag-run-link">' in text
    listed = api.client.get(f"/api/v1/tasks/{task['id']}/runs", headers=alice).json()["runs"]
    assert listed[-1]["parameters"] == plan["parameters"]  # the task page's runs show them
    assert api.client.get(f"/ui/tasks/{task['id']}/runs/{run_id}",
                          headers=api.as_user("bob")).status_code == 404  # fmt: skip
    assert api.client.get(f"/ui/tasks/{task['id']}/runs/{run_id + 1}",
                          headers=alice).status_code == 404  # fmt: skip
    script = api.client.get("/ui/static/run.js", headers=alice).text
    assert "textContent" in script and "innerHTML" not in script


def test_a_run_not_planned_yet_says_so(api: Api) -> None:
    task = _task_with_choices(api, "queued-run-task")
    with default_catalog().session() as session:
        run = Run(task_id=task["id"], airflow_run_id="manual__queued", state=RunState.QUEUED,
                  node_count=1, triggered_by="alice")  # fmt: skip
        session.add(run)
        session.flush()
        run_id = run.id
    page = api.client.get(f"/ui/tasks/{task['id']}/runs/{run_id}", headers=api.as_user("alice"))
    assert page.status_code == 200 and 'id="not-planned"' in page.text
    assert 'data-active="true"' in page.text and "none yet" in page.text
