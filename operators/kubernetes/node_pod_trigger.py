"""The trigger a node's ``launch`` task defers to (``operators.kubernetes.launch_pod``), run by
Airflow's triggerer: a training of hours then holds no worker slot, only a coroutine in the
triggerer.

Inside it, the cncf.kubernetes provider's ``KubernetesPodTrigger`` follows the node's pod as
the provider built it. Around it, this trigger watches the run's abort flag (an object in the
store, raised by a user's stop or by another node's failure) every ``abort_check_seconds``, as
a synchronous launch task's ``AbortWatcher`` does: when the flag goes up, and this node did not
raise it by failing, it records the node's stop, stops the provider's trigger (which would take
the pod's deletion for an error, and log one with a traceback into the task's log), deletes the
pod with the grace period, waits for it to be gone (its sidecar's final upload of logs and
``OUTPUT`` happens in that grace period), and fires a ``stopped`` event with the node's reason
(the task then ends failed, saying it). A pod that ends first
fires the provider's own event, unchanged. With the task's hang detection it also reads, at
each look at the flag, the node's hang report as the pod's sidecar keeps it in the store, and
says when the node looks hung in the task's log and the run's note (``operators.hang_notices``).

It also watches for the run's next restart (``octotrain.restarts``: another node was lost):
the pod is then deleted the same way, with the grace period to save a checkpoint but no stop
recorded, and a ``restart`` event fires, upon which the task starts the node's pod again.
And every ``LEFT_BEHIND_CHECK_SECONDS`` it reads the pod: one that its Kubernetes node left
behind (deleted, but never gone: ``octotrain.left_behind_pods``) is deleted at once, so that
the task sees it lost instead of following it forever.

The triggerer rebuilds a trigger from what ``serialize`` returns, kept in Airflow's metadata
DB (and read again after a triggerer restart), so it holds JSON only, and no credential: the
provider passes its trigger the Kubernetes connection's extra and the content of the worker's
kubeconfig, both dropped here; the triggerer resolves the connection by its id from its own
environment, as every Airflow component of an install has it.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import pendulum
from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger
from airflow.triggers.base import BaseTrigger, TriggerEvent
from kubernetes_asyncio.client import CustomObjectsApi
from kubernetes_asyncio.client.exceptions import ApiException

from hooks.kubernetes.kueue_workloads import never_admitted
from hooks.kubernetes.pod_launcher import pod_run_files
from hooks.runs.run_abort import RunAbortMarker
from hooks.runs.run_restarts import RunRestarts
from octotrain.abort_flags import AbortFlag
from octotrain.left_behind_pods import (
    LEFT_BEHIND_CHECK_SECONDS,
    left_behind,
    left_behind_message,
)
from octotrain.pods import KUEUE_API_GROUP, KUEUE_GROUP, KUEUE_VERSION
from octotrain.restarts import RunRestart
from octotrain.run_layout import RunObjects
from operators.hang_notices import HangNotices, pod_hang_notices

# The status of the event fired when the abort flag stopped the node.
STOPPED = "stopped"
# The status of the event fired when the run's next restart took the pod down, and its key
# with that restart (``RunRestart.to_json``).
RESTART = "restart"
RESTART_KEY = "restart"
# The key of that event with when the pod started on its Kubernetes node (ISO 8601; absent if it
# never did): with the event's time, the node's hold of its resources, for usage accounting.
HELD_SINCE = "held_since"
# The status of the event fired when Kueue will never admit the run (its message says why).
REFUSED = "refused"
# The scheduling gate Kueue holds a pod with until it admits the pod's group.
KUEUE_GATE = "kueue.x-k8s.io/admission"
# The status of Kubernetes' answer about a pod that is no more.
NOT_FOUND = 404
# Keyword arguments of the provider's trigger that can hold credentials (a kubeconfig's tokens
# and keys, a connection's inline kubeconfig).
CREDENTIAL_KWARGS = ("config_dict", "connection_extras")
# How long a cancelled follow of the provider's trigger is waited for (see ``_cancelled``).
CANCEL_WAIT_SECONDS = 5.0
# After deleting the pod, how much longer than its grace period it is given to be gone (the
# kubelet's pace, and this trigger's: it looks every ``abort_check_seconds``).
POD_END_MARGIN_SECONDS = 30


@dataclass(frozen=True)
class Refused:
    """Kueue will never admit the node's run; ``reason`` with the numbers."""

    reason: str


class NodePodTrigger(BaseTrigger):
    def __init__(
        self,
        *,
        pod_trigger_classpath: str,
        pod_trigger_kwargs: dict[str, Any],
        datetime_kwargs: list[str],
        run_prefix: str,
        node_index: str,
        abort_check_seconds: float,
        grace_seconds: int,
        catalog_run_id: int = 0,
        watch_hangs: bool = False,
        next_restart: int | None = None,
    ) -> None:
        super().__init__()
        self.pod_trigger_classpath = pod_trigger_classpath
        self.pod_trigger_kwargs = pod_trigger_kwargs
        self.datetime_kwargs = datetime_kwargs
        self.run_prefix = run_prefix
        self.node_index = node_index
        self.abort_check_seconds = abort_check_seconds
        self.grace_seconds = grace_seconds
        # The number of the run's restart that would take this pod down; None: none can come
        # (the task's max_node_restarts is used up, or 0).
        self.next_restart = next_restart
        # With hang detection: the run whose note says when this node looks hung.
        self.catalog_run_id, self.watch_hangs = catalog_run_id, watch_hangs

    @classmethod
    def around(
        cls,
        pod_trigger: KubernetesPodTrigger,
        *,
        run_prefix: str,
        node_index: str,
        abort_check_seconds: float,
        grace_seconds: int,
        catalog_run_id: int = 0,
        watch_hangs: bool = False,
        next_restart: int | None = None,
    ) -> NodePodTrigger:
        """The provider's trigger of node ``node_index``'s pod, also watching the abort flag of
        the run whose objects are under ``run_prefix``."""
        classpath, kwargs = pod_trigger.serialize()
        kwargs = {**kwargs, **dict.fromkeys(CREDENTIAL_KWARGS)}
        dates = sorted(name for name, value in kwargs.items() if isinstance(value, datetime))
        kwargs |= {name: kwargs[name].isoformat() for name in dates}
        return cls(
            pod_trigger_classpath=classpath, pod_trigger_kwargs=kwargs, datetime_kwargs=dates,
            run_prefix=run_prefix, node_index=node_index,
            abort_check_seconds=abort_check_seconds, grace_seconds=grace_seconds,
            next_restart=next_restart,
            catalog_run_id=catalog_run_id, watch_hangs=watch_hangs,
        )  # fmt: skip

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "pod_trigger_classpath": self.pod_trigger_classpath,
                "pod_trigger_kwargs": self.pod_trigger_kwargs,
                "datetime_kwargs": self.datetime_kwargs,
                "run_prefix": self.run_prefix,
                "node_index": self.node_index,
                "abort_check_seconds": self.abort_check_seconds,
                "grace_seconds": self.grace_seconds,
                "next_restart": self.next_restart,
                "catalog_run_id": self.catalog_run_id,
                "watch_hangs": self.watch_hangs,
            },
        )

    @cached_property
    def pod_trigger(self) -> KubernetesPodTrigger:
        """The provider's trigger, rebuilt once (``on_kill`` needs the one that ran)."""
        module, _, name = self.pod_trigger_classpath.rpartition(".")
        kwargs = dict(self.pod_trigger_kwargs)
        kwargs |= {key: pendulum.parse(kwargs[key]) for key in self.datetime_kwargs}
        trigger: KubernetesPodTrigger = getattr(importlib.import_module(module), name)(**kwargs)
        return trigger

    @cached_property
    def abort(self) -> RunAbortMarker:
        return RunAbortMarker(pod_run_files(RunObjects.from_prefix(self.run_prefix)))

    @cached_property
    def restarts(self) -> RunRestarts:
        return RunRestarts(pod_run_files(RunObjects.from_prefix(self.run_prefix)))

    @cached_property
    def hang_notices(self) -> HangNotices:
        return pod_hang_notices(
            run_prefix=self.run_prefix,
            node_index=self.node_index,
            catalog_run_id=self.catalog_run_id,
            log=self.log,
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        events = self.pod_trigger.run()
        pod_end = asyncio.ensure_future(anext(events, None))
        try:
            flag = await self._stopping_flag(pod_end)
            if flag is None:
                if (event := pod_end.result()) is not None:
                    yield event
                return
            if isinstance(flag, RunRestart):
                yield await self._restarting(flag, pod_end)
                return
            if isinstance(flag, Refused):
                yield TriggerEvent({"status": REFUSED, "name": self.pod_trigger.pod_name,
                                    "namespace": self.pod_trigger.pod_namespace,
                                    "message": flag.reason})  # fmt: skip
                return
            reason = flag.why_stopped(self.node_index)
            held_since = await self._started_at()
            await self._take_the_pod_down(reason, pod_end)
            yield TriggerEvent(
                {"status": STOPPED, "name": self.pod_trigger.pod_name,
                 "namespace": self.pod_trigger.pod_namespace, "message": reason,
                 **({HELD_SINCE: held_since.isoformat()} if held_since else {})}
            )  # fmt: skip
        finally:
            # Stopped before the provider's trigger saw the pod end; its generator can only
            # be closed once its pending step has ended.
            if await _cancelled(pod_end):
                await events.aclose()

    async def _stopping_flag(
        self, pod_end: asyncio.Future[Any]
    ) -> AbortFlag | RunRestart | Refused | None:
        """The abort flag that stops this node, or the run's restart that takes its pod down,
        or Kueue's refusal of the run, or None once the pod has ended first. A flag this node
        raised (its own failure) cannot be replaced (the first flag stays), so once it is seen
        only the pod's end is waited for."""
        loop = asyncio.get_running_loop()
        next_look = loop.time() + LEFT_BEHIND_CHECK_SECONDS
        while not pod_end.done():
            if loop.time() >= next_look:
                pod = await self._read_pod()
                if pod is not None:
                    await self._delete_if_left_behind(pod)
                    if refused := await self._never_admitted(pod):
                        return refused
                next_look = loop.time() + LEFT_BEHIND_CHECK_SECONDS
            flag = await self._flag()
            if flag is not None and flag.concerns_other_than(self.node_index):
                return flag
            restart = await self._restart() if flag is None else None
            if restart is not None:
                return restart
            if self.watch_hangs:
                await asyncio.to_thread(self.hang_notices)
            await asyncio.wait({pod_end}, timeout=None if flag else self.abort_check_seconds)
        return None

    async def _read_pod(self) -> Any:
        """The pod now; None when it cannot be read (gone, or the API briefly away: the
        provider's trigger sees to that)."""
        name, namespace = self.pod_trigger.pod_name, self.pod_trigger.pod_namespace
        try:
            return await self.pod_trigger.hook.get_pod(name=name, namespace=namespace)
        except Exception as error:
            self.log.debug("could not read the pod: %s", error)
            return None

    async def _never_admitted(self, pod: Any) -> Refused | None:
        """Kueue's refusal of the run whose pod still waits for its admission: the run asks more
        than its ClusterQueue can ever give
        (``hooks.kubernetes.kueue_workloads.never_admitted``)."""
        group = (pod.metadata.labels or {}).get(KUEUE_GROUP)
        gated = any(gate.name == KUEUE_GATE for gate in pod.spec.scheduling_gates or [])
        if not group or not gated:
            return None
        namespace = self.pod_trigger.pod_namespace
        try:
            async with self.pod_trigger.hook.get_conn() as connection:
                api = CustomObjectsApi(connection)
                workload = await api.get_namespaced_custom_object(
                    KUEUE_API_GROUP, KUEUE_VERSION, namespace, "workloads", group
                )
                if never_admitted(workload) is None:
                    return None
                queue = await api.get_namespaced_custom_object(
                    KUEUE_API_GROUP, KUEUE_VERSION, namespace, "localqueues",
                    workload["spec"]["queueName"],
                )  # fmt: skip
        except Exception as error:  # not made yet, or the API briefly away: next look
            self.log.debug("could not read the run's Kueue Workload: %s", error)
            return None
        cluster_queue = str(queue.get("spec", {}).get("clusterQueue", ""))
        return Refused(str(never_admitted(workload, cluster_queue=cluster_queue)))

    async def _delete_if_left_behind(self, pod: Any) -> None:
        """A pod its node left behind (``octotrain.left_behind_pods``) deleted at once: the
        provider's trigger then sees it gone, and the task takes it for lost."""
        name, namespace = self.pod_trigger.pod_name, self.pod_trigger.pod_namespace
        due = pod.metadata.deletion_timestamp
        if not left_behind(due, now=datetime.now(UTC)):
            return
        self.log.warning("%s", left_behind_message(name, due))
        try:
            await self.pod_trigger.hook.delete_pod(
                name=name, namespace=namespace, grace_period_seconds=0
            )
        except Exception as error:  # looked at again next time
            self.log.warning("could not delete the pod left behind: %s", error)

    async def _flag(self) -> AbortFlag | None:
        """The run's abort flag; None also while the store cannot be read (looked at again
        next time, as the pod goes on meanwhile)."""
        try:
            return await asyncio.to_thread(self.abort.flag)
        except Exception as error:
            self.log.warning("could not read the run's abort flag: %s", error)
            return None

    async def _restart(self) -> RunRestart | None:
        """The run's next restart, once a node asked for it; None also while the store cannot
        be read."""
        if self.next_restart is None:
            return None
        try:
            return await asyncio.to_thread(self.restarts.requested, self.next_restart)
        except Exception as error:
            self.log.warning("could not read the run's restarts: %s", error)
            return None

    async def _restarting(self, restart: RunRestart, pod_end: asyncio.Future[Any]) -> TriggerEvent:
        """Take the pod down for the run's restart (the grace period to save a checkpoint, and
        the sidecar's last sync of it); the event that has the task start it again."""
        held_since = await self._started_at()
        self.log.info("deleting the pod to start it again: node %s was lost", restart.node)
        await self._delete_the_pod(pod_end)
        return TriggerEvent(
            {"status": RESTART, "name": self.pod_trigger.pod_name,
             "namespace": self.pod_trigger.pod_namespace, RESTART_KEY: restart.to_json(),
             **({HELD_SINCE: held_since.isoformat()} if held_since else {})}
        )  # fmt: skip

    async def _started_at(self) -> datetime | None:
        """When the pod started on its Kubernetes node; None if it did not, or cannot be read
        (its usage is then not recorded, the stop goes on)."""
        try:
            pod = await self.pod_trigger.hook.get_pod(
                name=self.pod_trigger.pod_name, namespace=self.pod_trigger.pod_namespace
            )
        except Exception as error:
            self.log.warning("could not read the pod's start: %s", error)
            return None
        return pod.status.start_time if pod.status is not None else None

    async def _take_the_pod_down(self, reason: str, pod_end: asyncio.Future[Any]) -> None:
        self.log.info("deleting the pod: %s", reason)
        await asyncio.to_thread(self.abort.record_stop, self.node_index, reason)
        await self._delete_the_pod(pod_end)

    async def _delete_the_pod(self, pod_end: asyncio.Future[Any]) -> None:
        """Stop following the pod, delete it with the grace period (to save a checkpoint, and
        for the sidecar's last sync) and wait until it is gone."""
        await _cancelled(pod_end)
        await self.pod_trigger.hook.delete_pod(
            name=self.pod_trigger.pod_name,
            namespace=self.pod_trigger.pod_namespace,
            grace_period_seconds=self.grace_seconds,
        )
        await self._gone(within=self.grace_seconds + POD_END_MARGIN_SECONDS)

    async def _gone(self, *, within: float) -> None:
        """Wait, at most ``within`` seconds, until the deleted pod is gone: its containers have
        ended, the sidecar's final upload included."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while loop.time() < deadline:
            try:
                await self.pod_trigger.hook.get_pod(
                    name=self.pod_trigger.pod_name, namespace=self.pod_trigger.pod_namespace
                )
            except Exception as error:
                if isinstance(error, ApiException) and error.status == NOT_FOUND:
                    return
                # The API may be briefly away: looked at again next time.
                self.log.warning("could not read the pod being deleted: %s", error)
            await asyncio.sleep(self.abort_check_seconds)

    async def on_kill(self) -> None:
        """A user stopped the deferred task in Airflow (marked it failed or successful, or
        cleared it): the whole run stops, as when a running launch task is killed; the
        provider's trigger deletes the pod."""
        flag = AbortFlag.stopped_by_airflow(self.node_index)
        await asyncio.to_thread(self._stop_the_run, flag)
        await self.pod_trigger.on_kill()

    def _stop_the_run(self, flag: AbortFlag) -> None:
        self.abort.record_stop(self.node_index, flag.why_stopped(self.node_index))
        self.abort.raise_flag(flag)


async def _cancelled(future: asyncio.Future[Any]) -> bool:
    """``future`` cancelled, unless it is done, and its end awaited for at most
    ``CANCEL_WAIT_SECONDS``; whether it ended. The provider's trigger does not always end when
    cancelled (seen under load: a cancel during its wait for the pod's start was swallowed,
    and it went on until the pod ended), and a killed task must not wait for its training."""
    if not future.done():
        future.cancel()
        await asyncio.wait({future}, timeout=CANCEL_WAIT_SECONDS)
    if not future.done():
        return False
    if not future.cancelled():
        future.exception()  # retrieved: it ended on its own or with an error, both moot now
    return True
