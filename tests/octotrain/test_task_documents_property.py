"""Property: whatever document a user sends, judging it either accepts it or reports field
problems in plain words; it never crashes (on SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from octotrain.errors import InvalidInput
from octotrain.task_rules import ResolvedTask
from octotrain.task_spec import TaskSpec
from octotrain.tasks import Tasks
from tests.factories import ADMIN, MEMBER, VALID_TASK

FIELDS = sorted(TaskSpec.model_fields)
# Names that exist in the rule catalog, so that random documents also reach catalog rules.
KNOWN = [
    "demo",
    "other",
    "cpu-small",
    "modelarts-gpu",
    "linear-regression-numpy",
    "image-algo",
    "house-price-model",
    "house-prices",
    "many",
    "raw",
    "hot",
    "stale",
    "v1",
    "v2",
    "epochs",
    "n",
    "OMP_NUM_THREADS",
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=80)
    | st.sampled_from(KNOWN),
    lambda children: (
        st.lists(children, max_size=12)
        | st.dictionaries(st.sampled_from(KNOWN) | st.text(max_size=12), children, max_size=6)
    ),
    max_leaves=30,
)
data_ref = st.fixed_dictionaries(
    {},
    optional={
        "dataset": st.sampled_from(KNOWN) | json_values,
        "version": st.sampled_from(["v1", "v2", "v9"]) | json_values,
        "cache": st.sampled_from(["hot", "stale", "broken"]) | json_values,
    },
)
field_values = {
    "data_inputs": st.lists(data_ref, max_size=12),
    "mounts": st.lists(data_ref, max_size=12),
    "input_models": st.lists(
        st.fixed_dictionaries(
            {"repository": st.sampled_from(KNOWN), "version": st.integers(-2, 2**40)}
        ),
        max_size=12,
    ),
    "parameters": st.dictionaries(st.sampled_from(KNOWN) | st.text(max_size=8), json_values),
    "node_count": st.integers(-5, 10**6),
    "priority": st.integers(-100, 100) | json_values,
}
documents = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=10), json_values, max_size=16),
    st.builds(
        lambda base, changes: base | changes,
        st.just(VALID_TASK),
        st.fixed_dictionaries(
            {},
            optional={field: field_values.get(field, json_values) for field in FIELDS},
        ),
    ),
)


def judged(session: Session, document: Any, *, scope: Any = ADMIN) -> ResolvedTask | None:
    try:
        return Tasks(session, scope).check(document)
    except InvalidInput as error:
        assert error.problems
        for problem in error.problems:
            assert problem.field and problem.rule, problem
        return None


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=documents)
def test_any_document_is_accepted_or_refused_in_plain_words(
    rule_session: Session, document: Any
) -> None:
    for scope in (ADMIN, MEMBER):
        resolved = judged(rule_session, document, scope=scope)
        if resolved is not None:
            assert resolved.project.name == resolved.spec.project
