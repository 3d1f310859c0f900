"""The console's catalog pages (algorithms, datasets, caches, model repositories and a model
version's lineage) rendered for members from the catalog, escaped, only the user's projects;
and the REST route of lineage the other way round (the tasks and runs that used a version)."""

from __future__ import annotations

import html
import re

import pytest

from dags.factory import task_doc_md
from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import ModelRepository, ModelVersion, Run, RunState, TrainingTask
from plugins.ui import catalog_pages
from plugins.ui.catalog_pages import datasets_read
from tests.factories import VALID_TASK
from tests.plan_rows import recorded
from tests.plugins.api.conftest import Api

USED_BY = "/api/v1/projects/demo/model-repositories/house-price-model/versions/3/used-by"


def test_each_section_lists_the_users_projects_only(api: Api) -> None:
    bob = api.as_user("bob")  # a member of project "other" only
    for section, own in (("algorithms", "other-algo"), ("datasets", "other-data"),
                         ("caches", "New cache"), ("models", "other-model")):  # fmt: skip
        page = api.client.get(f"/ui/{section}", headers=bob)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert own in page.text and 'data-project="demo"' not in page.text
        assert f'href="/ui/{section}" aria-current="page"' in page.text  # the section bar
    assert api.client.get("/ui/models").status_code == 401  # Airflow's login


def test_the_algorithm_pages(api: Api) -> None:
    alice = api.as_user("alice")
    listed = api.client.get("/ui/algorithms", headers=alice).text
    assert 'href="/ui/algorithms/demo/image-algo">image-algo</a>' in listed
    assert 'href="/ui/algorithms/new?project=demo"' in listed
    edit = api.client.get("/ui/algorithms/demo/image-algo", headers=alice)
    assert edit.status_code == 200 and '"name": "optimizer"' in edit.text  # the saved document
    assert '<input name="name" required autocomplete="off" readonly>' in edit.text
    new = api.client.get("/ui/algorithms/new", params={"project": "demo"}, headers=alice)
    assert new.status_code == 200 and '<script type="application/json" id="saved">null' in new.text
    assert api.client.get("/ui/algorithms/demo/nope", headers=alice).status_code == 404
    refused = api.client.get("/ui/algorithms/new", params={"project": "demo"},
                             headers=api.as_user("bob"))  # fmt: skip
    assert refused.status_code == 404


def test_datasets_show_versions_with_publish_for_imported_ones(api: Api) -> None:
    page = api.client.get("/ui/datasets", headers=api.as_user("alice")).text
    imported = page[page.index('data-dataset="imported"') :].split("</tbody>")[0]
    assert "imported awaiting release" in imported and 'data-dialog="publish-dialog"' in imported
    published = page[page.index('data-dataset="many"') :].split("</tbody>")[0]
    assert 'data-dialog="publish-dialog"' not in published and published.count("published") >= 9
    assert 'data-dialog="upload-dialog" data-project="demo" data-dataset="many"' in page


def test_datasets_are_one_table_a_page_at_a_time_by_project_then_name(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_pages, "DATASETS_PER_PAGE", 2)
    alice = api.as_user("alice")
    first = api.client.get("/ui/datasets", headers=alice).text
    assert first.count('<table id="datasets"') == 1 and first.count('<tbody class="dataset"') == 2
    names = re.findall(
        r'<tbody class="dataset" data-project="([^"]+)" data-dataset="([^"]+)"', first
    )
    pager = first[first.index('<nav class="pager"') :]
    total = int(re.search(r"of (\d+) datasets", pager).group(1))
    assert f"1\u20132 of {total} datasets" in pager  # "1 to 2", an en dash between
    assert 'rel="next"' in pager and 'rel="prev"' not in pager
    second = api.client.get("/ui/datasets", params={"page": 2}, headers=alice).text
    later = re.findall(
        r'<tbody class="dataset" data-project="([^"]+)" data-dataset="([^"]+)"', second
    )
    assert names + later == sorted(names + later) and not set(names) & set(later)
    assert 'rel="prev"' in second[second.index('<nav class="pager"') :]
    assert api.client.get("/ui/datasets", params={"page": 0}, headers=alice).status_code == 400


def test_caches_offer_usable_versions_and_show_states(api: Api) -> None:
    page = api.client.get("/ui/caches", headers=api.as_user("alice")).text
    assert 'class="badge status-failed">failed</span>' in page  # cache "broken"
    assert 'data-project="demo" value="[&#34;imported&#34;, &#34;v1&#34;]"' in page
    assert "&#34;pending&#34;" not in page  # importing and failed versions cannot be cached


def test_a_model_versions_lineage_both_ways(api: Api) -> None:
    alice = api.as_user("alice")
    task = api.client.post(
        "/api/v1/tasks",
        json=VALID_TASK | {"name": "uses-v3-<b>", "training_kind": "incremental",
                           "input_models": [{"repository": "house-price-model", "version": 3}]},
        headers=alice,
    )  # fmt: skip
    assert task.status_code == 422  # the name's rule: a task is made with a valid name below
    task = api.client.post(
        "/api/v1/tasks",
        json=VALID_TASK | {"name": "uses-v3", "training_kind": "incremental",
                           "input_models": [{"repository": "house-price-model", "version": 3}]},
        headers=alice,
    ).json()  # fmt: skip
    with default_catalog().session() as session:
        v3 = session.query(ModelVersion).join(ModelRepository).filter(
            ModelRepository.name == "house-price-model", ModelVersion.version == 3
        ).one()  # fmt: skip
        read = {"repository": "house-price-model", "version": 3, "model_version_id": v3.id}
        plan = recorded(lineage={"input_models": [read]})
        session.add(Run(task_id=task["id"], airflow_run_id="manual__<i>x</i>",
                        state=RunState.FAILED, node_count=1, plan=plan))  # fmt: skip
        session.add(Run(task_id=task["id"], airflow_run_id="manual__other",
                        state=RunState.SUCCESS, node_count=1, plan={}))  # fmt: skip
    used = api.client.get(USED_BY, headers=alice).json()
    assert [item["name"] for item in used["tasks"]] == ["uses-v3"]
    assert [run["airflow_run_id"] for run in used["runs"]] == ["manual__<i>x</i>"]
    assert used["runs"][0]["model_version"] is None
    assert api.client.get(USED_BY, headers=api.as_user("bob")).status_code == 404

    page = api.client.get("/ui/models/demo/house-price-model/3", headers=alice)
    assert page.status_code == 200
    # its files, each with its download, and all of them as one zip
    versions = "/api/v1/projects/demo/model-repositories/house-price-model/versions/3"
    assert f'href="{versions}/download" download>Download all (zip)</a>' in page.text
    assert f'href="{versions}/files/' in page.text
    assert f'<a href="/ui/tasks/{task["id"]}">uses-v3</a>' in page.text
    # A run is named "#<its id>" and links to its page in the console; Airflow's id (escaped)
    # is in its title.
    launched = used["runs"][0]["id"]
    assert (f'<a href="/ui/tasks/{task["id"]}/runs/{launched}" '
            f'title="manual__&lt;i&gt;x&lt;/i&gt;">#{launched}</a>') in page.text  # fmt: skip
    assert "<i>x" not in page.text
    assert "<dt>Imported</dt><dd>by " in page.text  # made from: an import, not a run
    # Delete from the version's own page, which then goes back to the repositories
    assert _delete_url(page.text, "house-price-model v3") == (
        "/api/v1/projects/demo/model-repositories/house-price-model/versions/3"
    )
    assert 'data-then="/ui/models"' in page.text and 'id="delete-dialog"' in page.text
    listed = api.client.get("/ui/models", headers=alice).text
    assert 'href="/ui/models/demo/house-price-model/10">v10</a>' in listed
    assert api.client.get("/ui/models/demo/house-price-model/99", headers=alice).status_code == 404


def test_a_dags_docs_link_to_its_tasks_page_relative_to_airflows_root() -> None:
    """Airflow's pages carry <base href> of its root: the link works behind any base URL."""
    task = TrainingTask(id=7, name="house-prices")
    assert task_doc_md(task, "demo").endswith(
        "[its page in the Octotrain console](plugin/octotrain-tasks/octotrain/ui/tasks/7)."
    )


def _delete_url(page: str, label: str) -> str:
    """The route of the Delete button of the object ``label`` names on a rendered page."""
    match = re.search(rf'data-url="([^"]+)" data-label="{re.escape(label)}"', page)
    assert match, f"no Delete button for {label}"
    return html.unescape(match.group(1))


def test_delete_buttons_name_routes_that_delete_or_say_what_uses_the_object(api: Api) -> None:
    alice = api.as_user("alice")
    algorithms = api.client.get("/ui/algorithms", headers=alice).text
    assert 'id="delete-dialog"' in algorithms
    used = api.client.delete(
        _delete_url(algorithms, "algorithm linear-regression-numpy"), headers=alice
    )
    assert used.status_code == 409 and "still referenced by" in used.json()["detail"]
    caches = api.client.get("/ui/caches", headers=alice).text
    assert (
        api.client.delete(_delete_url(caches, "data cache broken"), headers=alice).status_code
        == 204
    )
    assert 'data-cache="broken"' not in api.client.get("/ui/caches", headers=alice).text
    datasets = api.client.get("/ui/datasets", headers=alice).text
    version = api.client.delete(_delete_url(datasets, "imported v1"), headers=alice)
    assert version.status_code == 204, version.text
    assert (
        'data-version="v1"'
        not in api.client.get("/ui/datasets", headers=alice)
        .text.split('data-dataset="imported"')[1]
        .split("</tbody>")[0]
    )
    models = api.client.get("/ui/models", headers=alice).text
    repository = api.client.delete(
        _delete_url(models, "model repository house-price-model"), headers=alice
    )
    assert (
        repository.status_code == 409 and "task '演示-房价回归'" in repository.json()["referrers"]
    )
    assert (
        api.client.delete(_delete_url(models, "house-price-model v10"), headers=alice).status_code
        == 204
    )


def test_a_dataset_read_both_as_a_data_input_and_as_a_mount_is_one_line_that_says_so() -> None:
    inputs = [
        {"dataset": "house-prices", "version": "v1", "via": "dataset"},
        {"dataset": "house-prices", "version": "v1", "via": "mount"},
        {"dataset": "images", "version": "v2", "via": "cache:images-c1"},
        {"repository": "house-price-model", "version": 3, "via": "model"},
    ]
    assert datasets_read(inputs) == [
        ("house-prices", "v1", "a data input and a resource mount"),
        ("images", "v2", "cache images-c1"),
    ]
