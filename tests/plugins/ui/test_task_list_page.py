"""The console's task list: sorted by a column (headers are links, the sorted one has
aria-sort), paged, with the filters kept by every link; bad parameters refused by name."""

from __future__ import annotations

import html
import re
from datetime import datetime, timedelta

from hooks.storage.catalog import default_catalog
from octotrain.catalog.models import Run, RunState
from plugins.ui.task_list import page_links
from tests.factories import VALID_TASK
from tests.plugins.api.conftest import Api

DASH = "\N{EN DASH}"  # between the first and last position the pager shows
NAMES = re.compile(r'class="task-name" href="[^"]+" title="[^"]*">([^<]+)</a>')


def listed(api: Api, **params: object) -> tuple[list[str], str]:
    page = api.client.get("/ui/tasks", params=params, headers=api.as_user("alice"))
    assert page.status_code == 200, page.text
    return NAMES.findall(page.text), page.text


def test_the_list_sorts_by_each_column_and_its_headers_link_to_the_other_order(api: Api) -> None:
    alice = api.as_user("alice")
    ids = {}
    for name, priority in (("sort-b", 5), ("sort-A", -3), ("sort-c", 40)):
        task = api.client.post(
            "/api/v1/tasks", json=VALID_TASK | {"name": name, "priority": priority}, headers=alice
        )
        ids[name] = task.json()["id"]
    started = datetime(2026, 12, 1, 10)
    with default_catalog().session() as session:
        for name, hours in (("sort-b", 2), ("sort-c", 1)):
            at = started + timedelta(hours=hours)
            session.add(Run(task_id=ids[name], airflow_run_id=f"manual__{name}", node_count=1,
                            state=RunState.SUCCESS, started_at=at))  # fmt: skip

    assert listed(api, q="sort-")[0] == ["sort-b", "sort-A", "sort-c"]  # by id
    assert listed(api, q="sort-", sort="name")[0] == ["sort-A", "sort-b", "sort-c"]
    assert listed(api, q="sort-", sort="-name")[0] == ["sort-c", "sort-b", "sort-A"]
    assert listed(api, q="sort-", sort="-id")[0] == ["sort-c", "sort-A", "sort-b"]
    assert listed(api, q="sort-", sort="-priority")[0] == ["sort-c", "sort-b", "sort-A"]
    # newest run first; a task never run comes last either way
    assert listed(api, q="sort-", sort="-last_run")[0] == ["sort-b", "sort-c", "sort-A"]
    assert listed(api, q="sort-", sort="last_run")[0] == ["sort-c", "sort-b", "sort-A"]
    assert listed(api, q="sort-", sort="created")[0] == ["sort-b", "sort-A", "sort-c"]
    assert listed(api, q="sort-", sort="-updated")[0] == ["sort-c", "sort-A", "sort-b"]

    names, page = listed(api, q="sort-", sort="name", status="success")
    assert names == ["sort-b", "sort-c"]  # the filters hold with the order
    headers = dict(re.findall(r'<th aria-sort="(\w+)"><a class="sort" href="([^"]+)"', page))
    assert list(headers) == ["ascending"]  # only the sorted column says how it is sorted
    assert html.unescape(headers["ascending"]) == "/ui/tasks?q=sort-&status=success&sort=-name"
    # another column's first click: times and priorities highest first, names A to Z
    assert 'href="/ui/tasks?q=sort-&amp;status=success&amp;sort=-priority"' in page
    assert '<a class="sort" href="/ui/tasks?q=sort-&amp;status=success">ID' in page  # the default
    assert '<input type="hidden" name="sort" value="name">' in page  # the filter form keeps it

    bogus = api.client.get("/ui/tasks", params={"sort": "colour"}, headers=alice)
    assert bogus.status_code == 400
    [problem] = bogus.json()["problems"]
    assert problem["field"] == "sort" and "'-last_run'" in problem["rule"]


def test_the_list_is_paged_and_its_page_links_keep_the_filters_and_order(api: Api) -> None:
    alice = api.as_user("alice")
    for number in range(12):
        api.client.post("/api/v1/tasks", json=VALID_TASK | {"name": f"paged-{number:02}"},
                        headers=alice)  # fmt: skip

    first, page = listed(api, q="paged-", per_page=10, sort="-name")
    assert first == [f"paged-{number:02}" for number in range(11, 1, -1)]
    assert f"1{DASH}10 of 12" in page
    assert 'aria-current="page">1</a>' in page
    assert 'href="/ui/tasks?q=paged-&amp;sort=-name&amp;page=2&amp;per_page=10" rel="next"' in page
    second, page = listed(api, q="paged-", per_page=10, sort="-name", page=2)
    assert second == ["paged-01", "paged-00"] and f"11{DASH}12 of 12" in page
    assert 'href="/ui/tasks?q=paged-&amp;sort=-name&amp;per_page=10" rel="prev"' in page
    assert 'rel="next"' not in page
    assert '<option value="10" selected>10 per page</option>' in page
    # a page past the end (the list shrank since the link was made) shows the last one
    assert listed(api, q="paged-", per_page=10, sort="-name", page=9)[0] == second
    assert len(listed(api, q="paged-")[0]) == 12  # 50 a page by default: one page, no pager
    assert 'rel="next"' not in listed(api, q="paged-")[1]

    for field, value in (("per_page", 7), ("page", 0)):
        refused = api.client.get("/ui/tasks", params={field: value}, headers=alice)
        assert refused.status_code == 400, (field, refused.text)
        assert refused.json()["problems"][0]["field"] == field


def test_page_links_name_the_first_the_last_and_the_pages_near_the_current_one() -> None:
    assert page_links(1, 1) == [1]
    assert page_links(3, 5) == [1, 2, 3, 4, 5]
    assert page_links(1, 9) == [1, 2, 3, None, 9]
    assert page_links(5, 9) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert page_links(6, 20) == [1, None, 4, 5, 6, 7, 8, None, 20]
