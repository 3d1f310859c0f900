"""Runs' plans as ``validate`` records them in the catalog (``Run.plan``: ``RunPlan.shown()``),
for the tests that add a run without running ``validate``: ``octotrain.planning.recorded_plan``
reads a whole plan or none (``{}``), never a few of its fields."""

from __future__ import annotations

from typing import Any

from octotrain.planning import NodeResources, RunPlan

# The resource spec a ``resources`` given to ``recorded`` is laid over (the example has none,
# as a plan recorded before plans named one).
RESOURCES = NodeResources(spec="cpu-small", kind="cce", cpu=1.0, memory_mib=512, gpu_count=0)

EXAMPLE = RunPlan(
    task_id=1,
    task_name="example",
    project="default",
    run_id="manual__example",
    run_key="manual__example-00000000",
    node_indices=["single-0"],
    master_addr="127.0.0.1",
    master_port=29500,
    image="python:3.11-slim",
    command=["python", "train.py"],
    parameters={},
    env={},
    run_as_user="1000",
    data_inputs=[],
    input_models=[],
    mounts=[],
    output_repository_id=1,
    output_repository="example-models",
    lineage={},
)


def recorded(**fields: Any) -> dict[str, Any]:
    """The recorded plan of an example run with ``fields`` in place of the example's; a
    ``resources`` dict is laid over ``RESOURCES`` (a test names the part it reads)."""
    document = EXAMPLE.shown()
    if fields.get("resources") is not None:
        fields["resources"] = RESOURCES.model_dump() | fields["resources"]
    return RunPlan.model_validate(document | fields).shown()
