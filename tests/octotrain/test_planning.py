"""Resolving tasks against the catalog, on SQLite and PostgreSQL."""

import pytest
from sqlalchemy import delete, select, update

from hooks.storage.catalog import CatalogHook
from hooks.storage.local_store import LocalFolderStore
from octotrain.catalog.models import (
    Algorithm,
    AnnotationStatus,
    Dataset,
    DatasetVersion,
    ModelRepository,
    ResourceSpec,
    Run,
    RunState,
    TrainingTask,
)
from octotrain.errors import FieldProblem, InvalidInput
from octotrain.parameters import parameter_problem
from octotrain.planning import RunPlan, build_run_plan, run_key
from octotrain.tasks import Tasks
from tests.factories import ADMIN, add_task, seed
from tests.plan_rows import recorded


def plan_for(catalog: CatalogHook, task_id: int):
    with catalog.session() as session:
        task = session.get(TrainingTask, task_id)
        return build_run_plan(
            session,
            task,
            run_id="manual__x",
            master_addr="127.0.0.1",
            master_port=1234,
            triggered_by="alice",
        )


def test_demo_task_plan(catalog: CatalogHook, store: LocalFolderStore) -> None:
    demo = seed(catalog, store)
    plan = plan_for(catalog, demo.task_id)
    assert plan.node_indices == ["distributed-0", "distributed-1"]
    assert plan.command == ["python", "train.py"]  # in CODE: the uploaded example folder
    assert plan.code is not None and plan.code.kind == "code"
    assert plan.code.name == "linear-regression-numpy v1"
    assert plan.lineage["algorithm"]["code_version"] == 1
    assert len(plan.lineage["algorithm"]["code_digest"]) == 64
    assert plan.parameters == {"epochs": 60, "learning_rate": 0.05, "batch_size": 64, "seed": 0}
    assert plan.env == {"OMP_NUM_THREADS": "1"}
    assert plan.run_as_user == "1000"
    assert [(i.name, i.object_prefix) for i in plan.data_inputs] == [
        ("house-prices_v1", "datasets/demo/house-prices/v1")
    ]
    assert plan.lineage["triggered_by"] == "alice"
    assert plan.lineage["data_inputs"][0]["version"] == "v1"


def test_missing_references_are_all_named(catalog: CatalogHook, store: LocalFolderStore) -> None:
    demo = seed(catalog, store)
    with catalog.session() as session:
        session.execute(delete(TrainingTask).where(TrainingTask.id != demo.task_id))
        task = session.get(TrainingTask, demo.task_id)
        task.spec = task.spec | {
            "algorithm": "gone-algorithm",
            "model_repository": "gone-repo",
            "data_inputs": [{"dataset": "house-prices", "version": "v9"}, {"cache": "gone"}],
        }
    with pytest.raises(InvalidInput) as caught:
        plan_for(catalog, demo.task_id)
    message = str(caught.value)
    for expected in ("gone-algorithm", "gone-repo", "house-prices' v9", "gone"):
        assert expected in message
    fields = [problem.field for problem in caught.value.problems]
    assert fields == ["algorithm", "model_repository", "data_inputs.0", "data_inputs.1"]


def test_unusable_dataset_is_rejected_with_the_reason(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    demo = seed(catalog, store)
    with catalog.session() as session:
        session.execute(update(Dataset).values(annotation_status=AnnotationStatus.UNANNOTATED))
    with pytest.raises(InvalidInput, match="unannotated; it must be annotated"):
        plan_for(catalog, demo.task_id)


def test_creating_a_task_checks_everything_and_writes_nothing_on_error(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    seed(catalog, store)
    with pytest.raises(InvalidInput) as caught:
        add_task(
            catalog,
            name="演示-房价回归",
            parameters={"epochs": "ten", "nope": 1},
            node_count=9,
            mounts=[{"dataset": "house-prices", "version": "v1"}],
        )
    fields = {problem.field for problem in caught.value.problems}
    assert fields == {"name", "parameters.epochs", "parameters.nope", "node_count", "mounts"}
    with catalog.session() as session:
        assert len(session.scalars(select(TrainingTask)).all()) == 1


def test_image_only_algorithm_on_modelarts_runs_as_ma_user(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    seed(catalog, store)
    with catalog.session() as session:
        session.execute(update(Algorithm).values(algorithm_type="image_only"))
        session.execute(update(ResourceSpec).values(kind="modelarts"))
    task_id = add_task(catalog, name="ma")
    assert plan_for(catalog, task_id).run_as_user == "ma-user"


@pytest.mark.parametrize(
    ("declaration", "value", "problem"),
    [
        ({"type": "int", "min": 1, "max": 5}, 3, None),
        ({"type": "int", "min": 1, "max": 5}, 6, "within [1, 5]"),
        ({"type": "int"}, True, "type int"),
        ({"type": "float"}, 1, None),
        ({"type": "bool"}, "yes", "type bool"),
        ({"type": "enum", "choices": ["adam", "sgd"]}, "rmsprop", "one of"),
        ({"type": "tensor"}, 1, "unknown type"),
    ],
)
def test_parameter_types(declaration: dict, value: object, problem: str | None) -> None:
    found = parameter_problem(declaration, value)
    assert (found is None) if problem is None else (problem in found)


def test_run_key_is_safe_and_distinct() -> None:
    first, second = (
        run_key("manual__2026-01-01T00:00:00+00:00"),
        run_key("manual__2026-01-01T00_00_00_00_00"),
    )
    assert first != second
    assert all(char.isalnum() or char in "_.-" for char in first)


def test_renamed_repository_is_reported_missing_by_its_old_name(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    seed(catalog, store)
    with catalog.session() as session:
        session.execute(update(ModelRepository).values(name="renamed"))
        assert session.scalars(select(DatasetVersion)).one()
    with (
        pytest.raises(InvalidInput, match="model repository 'house-price-model'"),
        catalog.session() as session,
    ):
        Tasks(session, ADMIN).create(
            {
                "project": "demo",
                "name": "x",
                "resource_spec": "cpu-small",
                "algorithm": "linear-regression-numpy",
                "model_repository": "house-price-model",
            },
        )


def test_a_runs_conf_is_applied_and_judged_like_a_saved_task(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    demo = seed(catalog, store)
    with catalog.session() as session:
        task = session.get(TrainingTask, demo.task_id)
        plan = build_run_plan(
            session,
            task,
            run_id="manual__conf",
            master_addr="127.0.0.1",
            master_port=1,
            triggered_by="alice",
            conf={"epochs": 3, "node_count": 1, "env": {"OMP_NUM_THREADS": "4"}},
        )
        assert plan.parameters["epochs"] == 3 and plan.node_indices == ["single-0"]
        assert plan.env["OMP_NUM_THREADS"] == "4" and plan.lineage["trigger"] == "manual"
        with pytest.raises(InvalidInput) as refused:
            build_run_plan(
                session,
                task,
                run_id="manual__bad",
                master_addr="127.0.0.1",
                master_port=1,
                triggered_by="alice",
                conf={"epochs": 0, "dropout": 0.5},
            )
        fields = {problem.field for problem in refused.value.problems}
        assert fields == {"parameters.epochs", "parameters.dropout"}


def test_the_launcher_s_rendezvous_is_asked_with_the_resolved_plan_and_may_refuse_it(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    """``validate`` builds its plan once: the launcher judges the plan as resolved (node 0's
    address not in it yet) and names that address; its refusal is the run's."""
    demo = seed(catalog, store)
    asked: list[RunPlan] = []

    def rendezvous(plan: RunPlan) -> tuple[str, int]:
        asked.append(plan)
        return f"{plan.run_key}.example", 29500 + plan.world_size

    def refusing(plan: RunPlan) -> tuple[str, int]:
        raise InvalidInput([FieldProblem("node_count", f"{plan.world_size} nodes never fit")])

    with catalog.session() as session:
        task = session.get(TrainingTask, demo.task_id)
        plan = build_run_plan(session, task, run_id="manual__met", rendezvous=rendezvous,
                              triggered_by="alice")  # fmt: skip
        with pytest.raises(InvalidInput) as refused:
            build_run_plan(session, task, run_id="manual__no", rendezvous=refusing,
                           triggered_by="alice")  # fmt: skip
        with pytest.raises(InvalidInput) as broken:  # the task's own rules first
            build_run_plan(session, task, run_id="manual__bad", rendezvous=refusing,
                           triggered_by="alice", conf={"epochs": 0})  # fmt: skip
    [judged] = asked
    assert (judged.master_addr, judged.master_port) == ("", 0)
    assert plan == judged.model_copy(
        update={"master_addr": f"{plan.run_key}.example", "master_port": 29502}
    )
    assert [p.rule for p in refused.value.problems] == ["2 nodes never fit"]
    assert [p.field for p in broken.value.problems] == ["parameters.epochs"]


def test_self_started_runs_train_on_the_newest_published_version(
    catalog: CatalogHook, store: LocalFolderStore, tmp_path
) -> None:
    from octotrain.catalog.dataset_versions import DatasetVersions

    seed(catalog, store)
    task_id = add_task(catalog, name="nightly", schedule="@daily", retrain_on=["house-prices"])
    rows = tmp_path / "rows.csv"
    rows.write_text("x0,y\n1,2\n")
    with catalog.session() as session:
        versions = DatasetVersions(session, ADMIN, store)
        for version in ("v2", "v3"):
            versions.create("demo", "house-prices", {"version": version}, {"t.csv": rows})
        versions.publish("demo", "house-prices", "v2")  # v3 stays awaiting release
    with catalog.session() as session:
        task = session.get(TrainingTask, task_id)
        common = {"master_addr": "127.0.0.1", "master_port": 1, "triggered_by": ""}
        scheduled = build_run_plan(
            session, task, run_id="scheduled__x", trigger="scheduled", newest_data=True, **common
        )
        manual = build_run_plan(session, task, run_id="manual__x", **common)
    assert [item.name for item in scheduled.data_inputs] == ["house-prices_v2"]
    assert scheduled.lineage["data_inputs"][0]["version"] == "v2"
    assert scheduled.lineage["trigger"] == "scheduled"
    assert [item.name for item in manual.data_inputs] == ["house-prices_v1"]  # as saved


@pytest.mark.parametrize(
    ("earlier", "reference", "rule"),
    [
        (RunState.RUNNING, None, "is running: only a failed or stopped run can be resumed"),
        (RunState.SUCCESS, None, "is success: only a failed or stopped run can be resumed"),
        (RunState.FAILED, 999_999, "has no run 999999"),
        (RunState.FAILED, "7", "must be a run's catalog id, got '7'"),
    ],
)
def test_a_resume_names_a_failed_or_stopped_run_of_the_same_task(
    catalog: CatalogHook, store: LocalFolderStore, earlier: RunState, reference: object, rule: str
) -> None:
    demo = seed(catalog, store)
    with catalog.session() as session:
        task = session.get(TrainingTask, demo.task_id)
        run = Run(task_id=task.id, airflow_run_id="manual__lost", state=earlier, node_count=2,
                  plan=recorded(run_key="manual__lost-1"))  # fmt: skip
        session.add(run)
        session.flush()
        common = {"master_addr": "127.0.0.1", "master_port": 1, "triggered_by": "alice"}
        with pytest.raises(InvalidInput) as refused:
            conf = {"resume_from": run.id if reference is None else reference}
            build_run_plan(session, task, run_id="manual__again", conf=conf, **common)
        [problem] = refused.value.problems
        assert problem.field == "conf.resume_from" and rule in problem.rule


def test_a_resumed_run_restores_the_earlier_runs_checkpoint_and_says_so_in_its_lineage(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    demo = seed(catalog, store)
    with catalog.session() as session:
        task = session.get(TrainingTask, demo.task_id)
        run = Run(task_id=task.id, airflow_run_id="manual__lost", state=RunState.STOPPED,
                  node_count=2, plan=recorded(run_key="manual__lost-1"))  # fmt: skip
        session.add(run)
        session.flush()
        plan = build_run_plan(session, task, run_id="manual__again", master_addr="127.0.0.1",
                              master_port=1, triggered_by="alice",
                              conf={"resume_from": run.id, "epochs": 5})  # fmt: skip
        assert (plan.resumed_from_run_id, plan.resumed_run_key) == (run.id, "manual__lost-1")
        assert [source.run_key for source in plan.checkpoint_sources] == [
            plan.run_key,  # this run's own first: a node started again
            "manual__lost-1",
        ]
        assert plan.lineage["resumed_from"] == {"run": run.id, "airflow_run_id": "manual__lost"}
        assert plan.parameters["epochs"] == 5  # changed settings, as any run may


def test_time_limits_come_from_the_task_and_a_run_may_change_them_by_the_same_rule(
    catalog: CatalogHook, store: LocalFolderStore
) -> None:
    demo = seed(catalog, store)
    common = {"master_addr": "127.0.0.1", "master_port": 1, "triggered_by": "alice"}
    with catalog.session() as session:
        task = session.get(TrainingTask, demo.task_id)
        task.spec = task.spec | {"max_wait_seconds": 600, "max_training_seconds": 7200}
        saved = build_run_plan(session, task, run_id="manual__saved", **common)
        assert (saved.max_wait_seconds, saved.max_training_seconds) == (600, 7200)
        conf = {"max_training_seconds": 60, "max_wait_seconds": None}  # null: as saved
        changed = build_run_plan(session, task, run_id="manual__conf", conf=conf, **common)
        assert (changed.max_wait_seconds, changed.max_training_seconds) == (600, 60)
        with pytest.raises(InvalidInput) as refused:
            build_run_plan(session, task, run_id="manual__bad",
                           conf={"max_training_seconds": 0}, **common)  # fmt: skip
        [problem] = refused.value.problems
        assert problem.field == "max_training_seconds"
        assert problem.rule == (
            "must be a whole number of seconds from 1 to 2592000 (30 days), or null for no "
            "limit; got 0"
        )
