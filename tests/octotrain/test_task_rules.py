"""Every rule of the manual's "Creating a training task", each with its valid and invalid
edges, judged against a catalog with an object in every state (``build_rule_catalog``), on
SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session

from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.access import Scope
from octotrain.documents import DESCRIPTION_FORBIDDEN
from octotrain.errors import InvalidInput
from octotrain.task_rules import ResolvedTask, check_task
from tests.factories import ADMIN, MEMBER, OUTSIDER, VALID_TASK

MODELARTS = {"resource_spec": "modelarts-gpu", "algorithm": "image-algo", "parameters": {"n": 1}}


def judge(session: Session, changes: dict[str, Any], scope: Scope = ADMIN) -> ResolvedTask:
    return check_task(session, scope, VALID_TASK | changes)


def problems(session: Session, changes: dict[str, Any], scope: Scope = ADMIN) -> dict[str, str]:
    with pytest.raises(InvalidInput) as caught:
        judge(session, changes, scope)
    found: dict[str, str] = {}
    for problem in caught.value.problems:
        found[problem.field] = f"{found.get(problem.field, '')} {problem.rule}".strip()
    return found


def datasets(*pairs: str) -> list[dict[str, str]]:
    return [{"dataset": name, "version": version} for name, version in map(str.split, pairs)]


def models(repository: str, *numbers: int) -> list[dict[str, Any]]:
    return [{"repository": repository, "version": number} for number in numbers]


VALID = {
    "shortest name": {"name": "a"},
    "longest name": {"name": "A" * 64},
    "Chinese name": {"name": "中文名称"},
    "mixed name": {"name": "训练-task_1"},
    "longest description": {"description": "x" * 256},
    "Chinese description with punctuation": {
        "description": "房价回归\uff0c第二版\u3002(test) [ok] ~!"
    },
    "one node": {"node_count": 1},
    "as many nodes as the spec allows": {"node_count": 4},
    "64 nodes on a 64-node spec": {"node_count": 64, **MODELARTS},
    "lowest priority": {"priority": -50},
    "highest priority": {"priority": 50},
    "uid 0": {"run_as_uid": 0},
    "uid 65535": {"run_as_uid": 65535},
    "lowest parameter value": {"parameters": {"epochs": 1}},
    "highest parameter value": {"parameters": {"epochs": 100000}},
    "float parameter given an int": {"parameters": {"learning_rate": 1}},
    "every parameter type": {
        **MODELARTS,
        "parameters": {"n": 3, "lr": 1.0, "optimizer": "sgd", "shuffle": False, "tag": "t"},
    },
    "changed variable": {"env": {"OMP_NUM_THREADS": "4"}},
    "string parameter at the platform's cap": {
        **MODELARTS,
        "parameters": {"n": 1, "tag": "中" * 8192},
    },
    "variable at the platform's cap": {"env": {"OMP_NUM_THREADS": "4" * 8192}},
    "published dataset": {"data_inputs": datasets("house-prices v1")},
    "imported dataset awaiting release": {"data_inputs": datasets("imported v1")},
    "cached cache": {"data_inputs": [{"cache": "hot"}]},
    "expired cache": {"data_inputs": [{"cache": "stale"}]},
    "ten data inputs": {
        "data_inputs": [*datasets(*(f"many v{n}" for n in range(1, 10))), {"cache": "hot"}]
    },
    "ten mounts on ModelArts": {
        **MODELARTS,
        "mounts": datasets("house-prices v1", *(f"many v{n}" for n in range(1, 10))),
    },
    "incremental from one version": {
        "training_kind": "incremental",
        "input_models": models("house-price-model", 1),
    },
    "incremental from ten versions": {
        "training_kind": "incremental",
        "input_models": models("house-price-model", *range(1, 11)),
    },
    "cron schedule": {"schedule": "30 2 * * 1-5"},
    "preset schedule": {"schedule": "@daily"},
    "retrain on a published data input": {
        "data_inputs": datasets("house-prices v1"),
        "retrain_on": ["house-prices"],
        "schedule": "@weekly",
    },
}


@pytest.mark.parametrize("changes", VALID.values(), ids=VALID.keys())
def test_valid_edges(rule_session: Session, changes: dict[str, Any]) -> None:
    resolved = judge(rule_session, changes)
    assert resolved.spec.name == changes.get("name", "rule-check")


INVALID: dict[str, tuple[dict[str, Any], str, str]] = {
    # name
    "empty name": ({"name": ""}, "name", "1-64 characters"),
    "65-character name": ({"name": "A" * 65}, "name", "1-64 characters"),
    "name with a space": ({"name": "has space"}, "name", "Chinese or English letters"),
    "name with a semicolon": ({"name": "semi;colon"}, "name", "Chinese or English letters"),
    "name with an accent": ({"name": "café"}, "name", "Chinese or English letters"),
    "name not a string": ({"name": 12}, "name", "must be text, got 12"),
    "name taken in the project": ({"name": "演示-房价回归"}, "name", "already exists"),
    # description
    "257-character description": ({"description": "x" * 257}, "description", "at most 256"),
    "description with a NUL": ({"description": "a\x00b"}, "description", "control characters"),
    # resource spec and nodes
    "unknown resource spec": ({"resource_spec": "nope"}, "resource_spec", "not available"),
    "another project's spec": ({"resource_spec": "other-spec"}, "resource_spec", "not available"),
    "zero nodes": ({"node_count": 0}, "node_count", "must be at least 1, got 0"),
    "fractional nodes": ({"node_count": 1.5}, "node_count", "must be a whole number"),
    "nodes as a string": ({"node_count": "2"}, "node_count", "must be a whole number"),
    "more nodes than the spec": ({"node_count": 5}, "node_count", "at most 4 for resource spec"),
    "more nodes than the project": (
        {"node_count": 65, "resource_spec": "big-cce"},
        "node_count",
        "limit of project 'demo'",
    ),
    # priority
    "fractional priority": ({"priority": 3.5}, "priority", "must be a whole number"),
    "priority as a string": ({"priority": "10"}, "priority", "must be a whole number"),
    "priority as a boolean": ({"priority": True}, "priority", "must be a whole number"),
    "priority 51": ({"priority": 51}, "priority", "must be at most 50, got 51"),
    "priority -51": ({"priority": -51}, "priority", "must be at least -50, got -51"),
    # algorithm, parameters, variables
    "unknown algorithm": ({"algorithm": "nope"}, "algorithm", "does not exist"),
    "another project's algorithm": ({"algorithm": "other-algo"}, "algorithm", "does not exist"),
    "unknown parameter": ({"parameters": {"nope": 1}}, "parameters.nope", "has no parameter"),
    "int parameter given a string": (
        {"parameters": {"epochs": "ten"}},
        "parameters.epochs",
        "type int",
    ),
    "int parameter given a boolean": (
        {"parameters": {"epochs": True}},
        "parameters.epochs",
        "type int",
    ),
    "int parameter below its range": (
        {"parameters": {"epochs": 0}},
        "parameters.epochs",
        "within [1, 100000]",
    ),
    "int parameter above its range": (
        {"parameters": {"epochs": 100001}},
        "parameters.epochs",
        "within [1, 100000]",
    ),
    "float parameter given a string": (
        {**MODELARTS, "parameters": {"n": 1, "lr": "0.1"}},
        "parameters.lr",
        "type float",
    ),
    "bool parameter given an int": (
        {**MODELARTS, "parameters": {"n": 1, "shuffle": 1}},
        "parameters.shuffle",
        "type bool",
    ),
    "string parameter given a number": (
        {**MODELARTS, "parameters": {"n": 1, "tag": 5}},
        "parameters.tag",
        "type string",
    ),
    "enum parameter given another value": (
        {**MODELARTS, "parameters": {"n": 1, "optimizer": "rmsprop"}},
        "parameters.optimizer",
        "one of ['adam', 'sgd']",
    ),
    "required parameter missing": (
        {**MODELARTS, "parameters": {}},
        "parameters.n",
        "required by the algorithm",
    ),
    "parameter value a list": (
        {"parameters": {"epochs": [1]}},
        "parameters.epochs",
        "must be a boolean, an integer, a number or a string, got list",
    ),
    "unknown variable": ({"env": {"NOPE": "1"}}, "env.NOPE", "no environment variable"),
    "variable value not a string": ({"env": {"OMP_NUM_THREADS": 4}}, "env.OMP_NUM_THREADS", ""),
    "string parameter with a NUL byte": (
        {**MODELARTS, "parameters": {"n": 1, "tag": "a\x00b"}},
        "parameters.tag",
        "must not contain control characters (U+0000-U+001F, U+007F); found U+0000 at position 1",
    ),
    "string parameter over the platform's cap": (
        {**MODELARTS, "parameters": {"n": 1, "tag": "x" * 8193}},
        "parameters.tag",
        "must be at most 8192 characters, got 8193",
    ),
    "variable with a newline": (
        {"env": {"OMP_NUM_THREADS": "1\n2"}},
        "env.OMP_NUM_THREADS",
        "must not contain control characters",
    ),
    "variable over the platform's cap": (
        {"env": {"OMP_NUM_THREADS": "1" * 10_000_000}},
        "env.OMP_NUM_THREADS",
        "must be at most 8192 characters, got 10000000",
    ),
    # uid
    "uid -1": ({"run_as_uid": -1}, "run_as_uid", "must be at least 0, got -1"),
    "uid 65536": ({"run_as_uid": 65536}, "run_as_uid", "must be at most 65535, got 65536"),
    "uid as a string": ({"run_as_uid": "1000"}, "run_as_uid", "must be a whole number"),
    # model repository and incremental training
    "unknown repository": ({"model_repository": "nope"}, "model_repository", "does not exist"),
    "another project's repository": (
        {"model_repository": "other-model"},
        "model_repository",
        "does not exist",
    ),
    "unknown training kind": ({"training_kind": "transfer"}, "training_kind", "'regular'"),
    "incremental without input models": (
        {"training_kind": "incremental"},
        "input_models",
        "needs 1-10 input model versions",
    ),
    "regular with input models": (
        {"input_models": models("house-price-model", 1)},
        "input_models",
        "only for incremental training",
    ),
    "eleven input models": (
        {"training_kind": "incremental", "input_models": models("house-price-model", *range(11))},
        "input_models",
        "at most 10 items",
    ),
    "missing input model version": (
        {"training_kind": "incremental", "input_models": models("house-price-model", 11)},
        "input_models.0",
        "does not exist",
    ),
    "failed input model version": (
        {"training_kind": "incremental", "input_models": models("broken-model", 1)},
        "input_models.0",
        "must be complete",
    ),
    "input model version zero": (
        {"training_kind": "incremental", "input_models": models("house-price-model", 0)},
        "input_models.0.version",
        "must be at least 1, got 0",
    ),
    "input model listed twice": (
        {"training_kind": "incremental", "input_models": models("house-price-model", 1, 1)},
        "input_models",
        "listed twice",
    ),
    # data inputs
    "eleven data inputs": (
        {"data_inputs": datasets(*(f"many v{n}" for n in range(1, 10))) + [{"cache": "hot"}] * 2},
        "data_inputs",
        "at most 10 items",
    ),
    "unknown dataset": ({"data_inputs": datasets("nope v1")}, "data_inputs.0", "does not exist"),
    "unknown dataset version": (
        {"data_inputs": datasets("house-prices v9")},
        "data_inputs.0",
        "house-prices' v9 does not exist",
    ),
    "dataset version importing": (
        {"data_inputs": datasets("pending v1")},
        "data_inputs.0",
        "is importing; it must be published or imported awaiting release",
    ),
    "dataset version failed": (
        {"data_inputs": datasets("pending v2")},
        "data_inputs.0",
        "is failed",
    ),
    "unannotated dataset": (
        {"data_inputs": datasets("raw v1")},
        "data_inputs.0",
        "unannotated; it must be annotated",
    ),
    "dataset of another sample type": (
        {"data_inputs": datasets("images v1")},
        "data_inputs.0",
        "holds image samples but algorithm 'linear-regression-numpy' needs table",
    ),
    "another project's dataset": (
        {"data_inputs": datasets("other-data v1")},
        "data_inputs.0",
        "does not exist",
    ),
    "failed cache": ({"data_inputs": [{"cache": "broken"}]}, "data_inputs.0", "failed"),
    "unknown cache": ({"data_inputs": [{"cache": "nope"}]}, "data_inputs.0", "does not exist"),
    "cache and dataset in one input": (
        {"data_inputs": [{"cache": "hot", "dataset": "house-prices", "version": "v1"}]},
        "data_inputs.0",
        "either a cache or a dataset",
    ),
    "dataset without a version": (
        {"data_inputs": [{"dataset": "house-prices"}]},
        "data_inputs.0",
        "needs both dataset and version",
    ),
    "data input listed twice": (
        {"data_inputs": datasets("house-prices v1", "house-prices v1")},
        "data_inputs",
        "listed twice",
    ),
    # resource mounts
    "mounts on a CCE spec": (
        {"mounts": datasets("house-prices v1")},
        "mounts",
        "need a ModelArts-type resource spec",
    ),
    "cache as a mount": (
        {**MODELARTS, "mounts": [{"cache": "hot"}]},
        "mounts.0",
        "only datasets can be mounted",
    ),
    "eleven mounts": (
        {**MODELARTS, "mounts": datasets(*(f"many v{n}" for n in range(1, 10))) * 2},
        "mounts",
        "at most 10 items",
    ),
    "unannotated mount": (
        {**MODELARTS, "mounts": datasets("raw v1")},
        "mounts.0",
        "must be annotated",
    ),
    # the document
    "unknown field": ({"gpu": 1}, "gpu", "is not a known field"),
    "unknown project": ({"project": "nope"}, "project", "project 'nope' does not exist"),
    # scheduled retraining
    "cron with six fields": ({"schedule": "0 0 * * * *"}, "schedule", "5 fields"),
    "cron out of range": ({"schedule": "61 * * * *"}, "schedule", "not a valid cron"),
    "cron that never fires": ({"schedule": "0 0 30 2 *"}, "schedule", "never fires"),
    "unknown preset": ({"schedule": "@fortnightly"}, "schedule", "unknown preset"),
    "retrain on a dataset that is no input": (
        {"data_inputs": datasets("many v1"), "retrain_on": ["house-prices"]},
        "retrain_on.0",
        "is not one of the task's data inputs",
    ),
    "retrain on an unknown dataset": ({"retrain_on": ["nope"]}, "retrain_on.0", "does not exist"),
    "retrain on a dataset without published version": (
        {"data_inputs": datasets("imported v1"), "retrain_on": ["imported"]},
        "retrain_on.0",
        "has no published version, so it cannot trigger retraining",
    ),
    "retrain on an unannotated dataset": (
        {"data_inputs": datasets("raw v1"), "retrain_on": ["raw"]},
        "retrain_on.0",
        "must be annotated",
    ),
    "retrain on a dataset twice": (
        {"data_inputs": datasets("house-prices v1"), "retrain_on": ["house-prices"] * 2},
        "retrain_on.1",
        "listed twice",
    ),
}


@pytest.mark.parametrize(("changes", "field", "rule"), INVALID.values(), ids=INVALID.keys())
def test_invalid_edges(
    rule_session: Session, changes: dict[str, Any], field: str, rule: str
) -> None:
    found = problems(rule_session, changes)
    assert field in found, found
    assert rule in found[field], found


@pytest.mark.parametrize("character", list(DESCRIPTION_FORBIDDEN))
def test_each_forbidden_description_character_is_named(
    rule_session: Session, character: str
) -> None:
    found = problems(rule_session, {"description": f"ok {character} here"})
    assert found["description"].endswith(f"found {character}")


def test_every_problem_comes_back_at_once_catalog_rules_included(rule_session: Session) -> None:
    found = problems(
        rule_session,
        {
            "name": "bad name",
            "priority": 99,
            "algorithm": "nope",
            "resource_spec": "cpu-small",
            "node_count": 9,
            "data_inputs": datasets("raw v1", "images v9"),
            "model_repository": "nope",
            "extra": True,
        },
    )
    assert set(found) == {
        "name",
        "priority",
        "algorithm",
        "node_count",
        "data_inputs.0",
        "data_inputs.1",
        "model_repository",
        "extra",
    }


def test_a_missing_name_is_reported_with_catalog_problems(rule_session: Session) -> None:
    document = {key: value for key, value in VALID_TASK.items() if key != "name"}
    with pytest.raises(InvalidInput) as caught:
        check_task(rule_session, ADMIN, document | {"algorithm": "nope"})
    assert {p.field: p.rule for p in caught.value.problems} == {
        "name": "is required",
        "algorithm": "algorithm 'nope' does not exist in project 'demo'",
    }


def test_the_document_must_be_an_object(rule_session: Session) -> None:
    with pytest.raises(InvalidInput, match="document: must be an object, got list"):
        check_task(rule_session, ADMIN, [VALID_TASK])


def test_defaults_of_the_manual(rule_session: Session) -> None:
    resolved = judge(rule_session, {})
    spec = resolved.spec
    assert (spec.node_count, spec.priority, spec.run_as_uid, spec.training_kind) == (
        1,
        0,
        1000,
        "regular",
    )
    assert resolved.parameters == {
        "epochs": 200,
        "learning_rate": 0.05,
        "batch_size": 64,
        "seed": 0,
    }
    assert resolved.env == {"OMP_NUM_THREADS": "1"}


@pytest.mark.parametrize(
    ("changes", "user"),
    [
        (MODELARTS, "ma-user"),
        ({"algorithm": "image-algo", "parameters": {"n": 1}}, ""),
        ({"resource_spec": "modelarts-gpu"}, ""),
    ],
    ids=["image-only on ModelArts", "image-only on CCE", "custom script on ModelArts"],
)
def test_container_user_is_ma_user_only_for_image_only_on_modelarts(
    rule_session: Session, changes: dict[str, Any], user: str
) -> None:
    assert judge(rule_session, changes).container_user == user


def test_projects_scope_what_a_task_may_name(rule_session: Session) -> None:
    other = {
        "project": "other",
        "resource_spec": "other-spec",
        "algorithm": "other-algo",
        "model_repository": "other-model",
    }
    assert judge(rule_session, other, MEMBER).project.name == "other"
    assert problems(rule_session, {}, MEMBER) == {"project": "project 'demo' does not exist"}
    assert problems(rule_session, other, OUTSIDER) == {"project": "project 'other' does not exist"}


def test_staged_inputs_carry_their_catalog_ids_for_lineage(rule_session: Session) -> None:
    resolved = judge(
        rule_session, {"data_inputs": [*datasets("house-prices v1"), {"cache": "hot"}]}
    )
    dataset, cache = resolved.data_inputs
    assert (dataset.name, dataset.kind) == ("house-prices_v1", "dataset")
    assert (cache.name, cache.kind) == ("hot", "cache")
    assert dataset.dataset_version_id == cache.dataset_version_id is not None
    assert cache.object_prefix.startswith("caches/demo/hot/")


def test_a_launch_over_the_kernels_limit_is_refused_naming_the_biggest_item(
    rule_session: Session, rule_store: LocalFolderStore
) -> None:
    from octotrain.catalog.named_objects import Algorithms

    Algorithms(rule_session, ADMIN, rule_store).create(
        "demo",
        {
            "name": "many-strings",
            "image": "python:3.11",
            "command": ["python", "train.py"],
            "sample_type": "table",
            "parameters": [{"name": f"s{n}", "type": "string"} for n in range(50)],
            "env": {"BIG": "b" * 8192},
        },
    )
    # 50 values of 8,000 three-byte characters: each is within the cap, together 1.1 MiB.
    values = {f"s{n}": "中" * 8000 for n in range(50)} | {"s3": "文" * 8192}
    found = problems(rule_session, {"algorithm": "many-strings", "parameters": values})
    assert list(found) == ["parameters.s3"], found
    assert "would take 1,181 KiB, more than the 1,024 KiB" in found["parameters.s3"]
    assert found["parameters.s3"].endswith("the biggest item is parameters.s3 (24 KiB)")
    fewer = {f"s{n}": "中" * 8192 for n in range(40)}
    assert judge(rule_session, {"algorithm": "many-strings", "parameters": fewer}).parameters
