"""The ``dag-params`` part (docs/reference/dag-params.md): every Param of a task's DAG, as
``dags.run_params`` builds them for the example task ``EXAMPLE_TASK`` with the demo catalog's
objects, and how a secret's Param looks."""

from __future__ import annotations

from typing import Any

from .airflow_home import private_airflow_home
from .markdown import cell, code, json_text
from .schema_words import rules, type_of

# The task whose DAG's Params are shown, and the catalog its algorithm and spec are from.
EXAMPLE_TASK = "examples/tasks/incremental.yaml"
EXAMPLE_CATALOG = "examples/demo/catalog.yaml"


def dag_params_reference() -> str:
    """Every Param of the example task's DAG, then how a secret's Param looks."""
    from dags.run_params import secret_schema
    from octotrain.secrets import MASK, SENSITIVE_WORDS

    task, params = task_params(EXAMPLE_TASK)
    rows = [
        "| Param | type | default (this task) | rule | meaning | Trigger form |",
        "|---|---|---|---|---|---|",
    ]
    for name, param in params.items():
        schema = param.schema
        rows.append(
            f"| `{name}` | {type_of(schema, str)} | {code(json_text(param.value))} | "
            f"{'; '.join(rules(schema, str))} | {cell(param.description or '')} | "
            f"{cell(schema.get('title', ''))}, in {cell(schema.get('section', ''))} |"
        )
    secret = secret_schema()
    words = ", ".join(code(word) for word in SENSITIVE_WORDS)
    values = " and ".join(code(json_text(value)) for value in secret["enum"])
    return (
        f"The DAG of the task of `{EXAMPLE_TASK}` ({code(task.name)}), with its algorithm and "
        f"resource spec from `{EXAMPLE_CATALOG}`:\n\n" + "\n".join(rows) + "\n\n"
        f"A parameter or variable whose name contains one of {words} is a secret: its Param's "
        f"default is {code(MASK)}, its only values {values}; {cell(secret['description'])}.\n"
    )


def task_params(task_file: str) -> tuple[Any, dict[str, Any]]:
    """The task of ``task_file`` (in the repository) and its DAG's Params, as the DAG factory
    builds them (``dags.run_params.run_params``) from the catalog's rows: here rows made from
    ``EXAMPLE_CATALOG``'s documents as the catalog makes them, never stored."""
    import yaml

    private_airflow_home()
    from dags.run_params import run_params
    from octotrain.catalog.documents import (
        AlgorithmDocument,
        ProjectDocument,
        ResourceSpecDocument,
    )
    from octotrain.catalog.models import Algorithm, Project, ResourceSpec, TrainingTask
    from octotrain.settings import REPO_ROOT
    from octotrain.task_spec import TaskSpec

    catalog = yaml.safe_load((REPO_ROOT / EXAMPLE_CATALOG).read_text(encoding="utf-8"))
    document = TaskSpec.model_validate(
        yaml.safe_load((REPO_ROOT / task_file).read_text(encoding="utf-8"))
    )
    project = Project(**_columns(ProjectDocument, catalog["project"]))
    spec_document = _named(catalog["resource_specs"], document.resource_spec)
    spec = ResourceSpec(project=project, **_columns(ResourceSpecDocument, spec_document))
    # "code" is the folder the seed uploads as the algorithm's code, not a field of it
    algorithm_document = _named(catalog["algorithms"], document.algorithm)
    algorithm_document = {k: v for k, v in algorithm_document.items() if k != "code"}
    algorithm = Algorithm(project=project, **_columns(AlgorithmDocument, algorithm_document))
    task = TrainingTask(project=project, name=document.name, spec=document.stored())
    return task, run_params(task, task.document, algorithm, spec)


def _columns(model: Any, document: dict[str, Any]) -> dict[str, Any]:
    """A catalog document's column values, as the catalog stores a valid one."""
    return model.model_validate(document).model_dump(mode="json", exclude_none=True)


def _named(documents: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(document for document in documents if document["name"] == name)
