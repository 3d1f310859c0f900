"""The trigger a node's ``launch`` task defers to (``operators.launch_pod``), run by Airflow's
triggerer: a training of hours then holds no worker slot, only a coroutine in the triggerer.

Inside it, the cncf.kubernetes provider's ``KubernetesPodTrigger`` follows the node's pod as
the provider built it. Around it, this trigger watches the run's abort flag (an object in the
store, raised by a user's stop or by another node's failure) every ``abort_check_seconds``, as
a synchronous launch task's ``AbortWatcher`` does: when the flag goes up, and this node did not
raise it by failing, it records the node's stop, deletes the pod with the grace period, waits
for the provider's trigger to see the pod end (its sidecar's final upload of logs and ``OUTPUT``
happens in that grace period), and fires a ``stopped`` event with the node's reason. A pod
that ends first fires the provider's own event, unchanged.

The triggerer rebuilds a trigger from what ``serialize`` returns, kept in Airflow's metadata
DB (and read again after a triggerer restart), so it holds JSON only, and no credential: the
provider passes its trigger the Kubernetes connection's extra and the content of the worker's
kubeconfig, both dropped here; the triggerer resolves the connection by its id from its own
environment, as every Airflow component of an install has it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import AsyncIterator
from datetime import datetime
from functools import cached_property
from typing import Any

import pendulum
from airflow.providers.cncf.kubernetes.triggers.pod import KubernetesPodTrigger
from airflow.triggers.base import BaseTrigger, TriggerEvent

from hooks.object_store import default_object_store
from hooks.run_abort import StoreAbortMarker
from octotrain.abort_flags import AbortFlag

# The status of the event fired when the abort flag stopped the node.
STOPPED = "stopped"
# Keyword arguments of the provider's trigger that can hold credentials (a kubeconfig's tokens
# and keys, a connection's inline kubeconfig).
CREDENTIAL_KWARGS = ("config_dict", "connection_extras")
# After deleting the pod, how much longer than its grace period the provider's trigger is given
# to see it end (it looks every poll interval, and retries a missing pod a few times).
POD_END_MARGIN_SECONDS = 30


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
    ) -> None:
        super().__init__()
        self.pod_trigger_classpath = pod_trigger_classpath
        self.pod_trigger_kwargs = pod_trigger_kwargs
        self.datetime_kwargs = datetime_kwargs
        self.run_prefix = run_prefix
        self.node_index = node_index
        self.abort_check_seconds = abort_check_seconds
        self.grace_seconds = grace_seconds

    @classmethod
    def around(
        cls,
        pod_trigger: KubernetesPodTrigger,
        *,
        run_prefix: str,
        node_index: str,
        abort_check_seconds: float,
        grace_seconds: int,
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
    def abort(self) -> StoreAbortMarker:
        return StoreAbortMarker(default_object_store(), self.run_prefix)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        events = self.pod_trigger.run()
        pod_end = asyncio.ensure_future(anext(events, None))
        try:
            flag = await self._stopping_flag(pod_end)
            if flag is None:
                if (event := pod_end.result()) is not None:
                    yield event
                return
            reason = flag.why_stopped(self.node_index)
            await self._take_the_pod_down(reason, pod_end)
            yield TriggerEvent(
                {"status": STOPPED, "name": self.pod_trigger.pod_name,
                 "namespace": self.pod_trigger.pod_namespace, "message": reason}
            )  # fmt: skip
        finally:
            if not pod_end.done():  # stopped before the provider's trigger saw the pod end
                pod_end.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pod_end
            await events.aclose()

    async def _stopping_flag(self, pod_end: asyncio.Future[Any]) -> AbortFlag | None:
        """The abort flag that stops this node, or None once the pod has ended first. A flag
        this node raised (its own failure) cannot be replaced (the first flag stays), so once
        it is seen only the pod's end is waited for."""
        while not pod_end.done():
            flag = await self._flag()
            if flag is not None and flag.concerns_other_than(self.node_index):
                return flag
            await asyncio.wait({pod_end}, timeout=None if flag else self.abort_check_seconds)
        return None

    async def _flag(self) -> AbortFlag | None:
        """The run's abort flag; None also while the store cannot be read (looked at again
        next time, as the pod goes on meanwhile)."""
        try:
            return await asyncio.to_thread(self.abort.flag)
        except Exception as error:
            self.log.warning("could not read the run's abort flag: %s", error)
            return None

    async def _take_the_pod_down(self, reason: str, pod_end: asyncio.Future[Any]) -> None:
        self.log.info("deleting the pod: %s", reason)
        await asyncio.to_thread(self.abort.record_stop, self.node_index, reason)
        await self.pod_trigger.hook.delete_pod(
            name=self.pod_trigger.pod_name,
            namespace=self.pod_trigger.pod_namespace,
            grace_period_seconds=self.grace_seconds,
        )
        await asyncio.wait({pod_end}, timeout=self.grace_seconds + POD_END_MARGIN_SECONDS)

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
