"""The sweep pages as the server renders them: the form of a task's sweep (a row per parameter of
its algorithm with the task's value and its declaration, the charts its runs write, a free name),
a sweep's page (what it searches, in words), the task page's Sweep action and a trial's run
naming its sweep; each page only for members, its scripts behind the login."""

from __future__ import annotations

import json
import re

from hooks.storage.catalog import default_catalog
from tests.factories import VALID_TASK
from tests.plugins.api.conftest import Api
from tests.plugins.ui.sweep_rows import finished_sweep


def _task(api: Api, name: str) -> int:
    made = api.client.post(
        "/api/v1/tasks",
        json=VALID_TASK | {"name": name, "parameters": {"learning_rate": 0.02}},
        headers=api.as_user("alice"),
    )
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def test_a_sweep_s_page_says_what_it_searches_and_only_to_members(api: Api) -> None:
    task_id = _task(api, "swept-page")
    sweep_id = finished_sweep(default_catalog(), task_id)
    alice = api.as_user("alice")
    page = api.client.get(f"/ui/sweeps/{sweep_id}", headers=alice)
    assert page.status_code == 200, page.text
    assert f'data-sweep="{sweep_id}"' in page.text and f'data-task="{task_id}"' in page.text
    assert '<span id="sweep-name">lr-search</span>' in page.text
    assert "minimize the final value of <code>mse</code> of chart <code>fit</code>" in page.text
    assert "<code>learning_rate: float 0.001…0.5 log</code>" in page.text
    assert "<code>batch_size: 16 | 64 | 256</code>" in page.text
    assert "<code>epochs: 300</code>" in page.text
    assert "/ui/static/sweep.js" in page.text and "/ui/static/echarts.min.js" in page.text
    assert api.client.get(f"/ui/sweeps/{sweep_id}", headers=api.as_user("bob")).status_code == 404
    assert api.client.get(f"/ui/sweeps/{sweep_id}").status_code == 401
    assert api.client.get("/ui/sweeps/999999", headers=alice).status_code == 404

    # what the page's script reads: the sweep in one request, the curves in another
    sweep = api.client.get(f"/api/v1/sweeps/{sweep_id}", headers=alice).json()
    assert len(sweep["trials"]) == 24 and sweep["state"] == "finished"
    assert sweep["counts"]["pruned"] == 4 and sweep["counts"]["failed"] == 1
    assert sweep["best"]["model_version"] is not None
    curves = api.client.get(f"/api/v1/sweeps/{sweep_id}/curves", headers=alice).json()
    assert {len(trial["steps"]) for trial in curves["trials"] if trial["state"] == "pruned"} == {12}

    # a trial's run names its sweep; the task page offers Sweep and lists the sweeps
    trial = sweep["trials"][0]
    run = api.client.get(f"/ui/tasks/{task_id}/runs/{trial['run_id']}", headers=alice).text
    shown = re.search(r'<dd id="run-sweep">(.*?)</dd>', run, re.S).group(1)
    assert shown == f'trial 0 of <a href="/ui/sweeps/{sweep_id}">lr-search</a>'
    task_page = api.client.get(f"/ui/tasks/{task_id}", headers=alice).text
    assert f'href="/ui/tasks/{task_id}/sweeps/new" id="new-sweep"' in task_page
    assert 'id="sweep-list"' in task_page


def test_the_sweep_form_offers_the_algorithm_s_parameters_with_the_task_s_values(
    api: Api,
) -> None:
    task_id = _task(api, "swept-form")
    alice = api.as_user("alice")
    form = api.client.get(f"/ui/tasks/{task_id}/sweeps/new", headers=alice)
    assert form.status_code == 200, form.text
    data = re.search(r'<script type="application/json" id="sweep-parameters-data">(.*?)</script>',
                     form.text, re.S).group(1)  # fmt: skip
    parameters = {item["name"]: item for item in json.loads(data)}
    assert list(parameters) == ["epochs", "learning_rate", "batch_size", "seed"]
    assert parameters["learning_rate"]["value"] == 0.02  # the task's
    assert parameters["epochs"]["value"] == 200  # the algorithm's default
    declaration = parameters["learning_rate"]["declaration"]
    assert (declaration["type"], declaration["min"], declaration["max"]) == ("float", 0.0, 10.0)
    # a task never run, of an algorithm without metric definitions, writes no known chart yet
    assert "none known yet" in form.text
    assert 'value="sweep-1"' in form.text
    finished_sweep(default_catalog(), task_id, trials=6, name="sweep-1")
    again = api.client.get(f"/ui/tasks/{task_id}/sweeps/new", headers=alice).text
    assert 'value="sweep-2"' in again  # a free name
    assert "/ui/static/sweep_form.js" in again
    assert (
        api.client.get(f"/ui/tasks/{task_id}/sweeps/new", headers=api.as_user("bob")).status_code
        == 404
    )
    assert api.client.get(f"/ui/tasks/{task_id}/sweeps/new").status_code == 401


def test_the_sweep_scripts_are_served_behind_the_login_and_pruned_has_its_colour(
    api: Api,
) -> None:
    alice = api.as_user("alice")
    for name in ("sweep.js", "sweep_form.js"):
        script = api.client.get(f"/ui/static/{name}", headers=alice)
        assert script.status_code == 200, name
        assert "innerHTML" not in script.text  # texts are never parsed as HTML
        assert api.client.get(f"/ui/static/{name}").status_code == 401
    css = api.client.get("/ui/static/pages.css", headers=alice).text
    assert ".state-pruned {" in css
    assert re.search(r":root\[data-theme=dark\] \{ --state-pruned-solid:", css)
