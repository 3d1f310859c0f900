"""``octotrain node stage|sync``: the init and sidecar containers of a training pod (run by
the Octotrain image; see octotrain/pods.py and hooks/kubernetes/pod_node.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.lazy_commands import help_of
from hooks.inputs.node_cache import NodeCache
from hooks.kubernetes.pod_node import NodeSync, stage_pod_node
from hooks.storage.object_store import default_object_store
from octotrain.settings import get_settings

nodes_app = typer.Typer(help=help_of("node"))
Node = Annotated[str, typer.Option(help="The node index: single-0, distributed-N.")]
Work = Annotated[Path, typer.Option(help="The node's work folder.")]
GIB = 1024**3


def _task_of(key: str) -> int:
    """``runs/<task>/<run key>/…`` → the task ID."""
    parts = key.split("/")
    if len(parts) < 3 or parts[0] != "runs" or not parts[1].isdigit():
        raise typer.BadParameter(f"{key!r} is not under runs/<task>/<run key>/")
    return int(parts[1])


@nodes_app.command("stage", help="Lay out the work folder and stage the node's inputs.")
def stage(
    plan: Annotated[str, typer.Option(help="Object key of the run's stage plan.")],
    node: Node,
    work: Work,
    cache: Annotated[Path, typer.Option(help="The node cache folder.")],
    agent: Annotated[Path, typer.Option(help="Where the training container finds the agent.")],
) -> None:
    settings = get_settings()
    try:
        stage_pod_node(
            default_object_store(),
            plan_key=plan,
            task_id=_task_of(plan),
            node_index=node,
            work=work,
            cache_dir=cache,
            agent_dir=agent,
            cache_max_bytes=int(settings.node_cache_max_gb * GIB),
        )
    except Exception as error:
        typer.echo(f"error: staging failed: {error}", err=True)
        raise typer.Exit(1) from None


@nodes_app.command("sync", help="Sync the node's files to the object store until it ends.")
def sync(
    prefix: Annotated[str, typer.Option(help="The run's prefix, runs/<task>/<run key>.")],
    node: Node,
    work: Work,
    every: Annotated[float, typer.Option(help="Seconds between two syncs.")] = 5,
    exit_file: Annotated[
        Path, typer.Option(help="Written by the wrapper when training ends.")
    ] = Path("/octotrain/work/exit-code"),
    ready_file: Annotated[
        Path, typer.Option(help="Written once a stop is handled (the training waits for it).")
    ] = Path("/octotrain/work/sync-ready"),
    done_file: Annotated[
        Path, typer.Option(help="Written once the final upload is done (the wrapper waits).")
    ] = Path("/octotrain/work/upload-done"),
    cache: Annotated[
        Path | None,
        typer.Option(help="The node cache folder: the node's pins are released at its end."),
    ] = None,
    run_id: Annotated[str, typer.Option(help="The Airflow run id (named in checkpoints).")] = "",
    checkpoint_every: Annotated[
        float, typer.Option(help="At most how often CHECKPOINT is synced, in seconds.")
    ] = 30,
) -> None:
    sidecar = NodeSync(
        default_object_store(),
        prefix=prefix,
        task_id=_task_of(prefix),
        node_index=node,
        work=work,
        run_id=run_id,
        checkpoint_every=checkpoint_every,
        cache=NodeCache(cache, max_bytes=0) if cache is not None else None,
    )
    raise typer.Exit(
        sidecar.run(every=every, exit_file=exit_file, ready_file=ready_file, done_file=done_file)
    )
