"""One pod on the host kubelet's node: its volumes, its containers' lives, its status, its end.

A :class:`PodWorker` is the kubelet's pod worker for one pod uid:

1. reports Pending with the containers ``ContainerCreating`` and sets up the
   volumes (retrying every few seconds with a ``FailedMount`` Warning Event);
2. runs the init containers one after the other, then all containers at once,
   each as a process (``containers``), restarted according to
   ``restartPolicy`` with the kubelet's doubling back-off (``CrashLoopBackOff``);
3. writes the pod status through ``pods/{name}/status`` on every change
   (phase, conditions, containerStatuses with exit codes, startTime,
   hostIP/podIP = the node's address), again every few seconds until a
   write succeeds, and the kubelet's Events (Created, Started, Killing,
   BackOff...);
4. when the pod is deleted: SIGTERM to every container, SIGKILL after the
   grace period, the final status, then the delete with grace 0 that lets the
   API server remove the object; the pod's directory goes with it.

ConfigMaps and Secrets the pod refers to are read from the API server before
its volumes are set up and before each container start (``inputs``); what the
workers share is a :class:`~wlmvk_dev.hostnode.context.HostContext` (``context``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import structlog

from wlmvk.core.errors import InvalidInput, NotFound, WlmvkError
from wlmvk.core.names import EventType
from wlmvk.kube.bodies import PODS, Body
from wlmvk_dev.hostnode import containers as hostcontainers
from wlmvk_dev.hostnode import inputs
from wlmvk_dev.hostnode import logs as hostlogs
from wlmvk_dev.hostnode import podstatus as hostpodstatus
from wlmvk_dev.hostnode import volumes as hostvolumes
from wlmvk_dev.hostnode.context import HostContext, now
from wlmvk_dev.hostnode.podstatus import ContainerState

_log = structlog.get_logger(__name__)

MOUNT_RETRY = 2.0
CONFIG_RETRY = 2.0
STATUS_RESYNC = 5.0
"""Seconds between a live pod's status checks: a write that failed (a control plane just started
answers 503 for a while) is made again, as the kubelet's status manager resyncs."""

Obj = Body


class PodWorker:
    def __init__(self, ctx: HostContext, pod: Obj) -> None:
        self.ctx = ctx
        self.pod = pod
        meta, spec = pod["metadata"], pod.get("spec") or {}
        self.uid: str = meta["uid"]
        self.name: str = meta["name"]
        self.namespace: str = meta.get("namespace", "default")
        self.changed = asyncio.Event()
        self.removed = False
        self.init = [ContainerState(c["name"], c.get("image", "")) for c in spec.get("initContainers") or []]
        self.containers = [
            ContainerState(c["name"], c.get("image", "")) for c in spec.get("containers") or []
        ]
        self.sandbox_ready = False
        self.failure: tuple[str, str] | None = None
        self.start_time = now()
        self.written: Obj | None = None
        """The status this worker last wrote."""
        self.refs: dict[tuple[str, str], Obj | None] = {}
        self.processes: dict[str, hostcontainers.Process] = {}
        self.starts: Counter[str] = Counter()
        self.dir = ctx.root / "pods" / self.uid
        self.volumes: dict[str, str] = {}

    # -- inputs from the kubelet ---------------------------------------------------------------

    def update(self, pod: Obj) -> None:
        self.pod = pod
        self.changed.set()

    def remove(self) -> None:
        self.removed = True
        self.changed.set()

    @property
    def deleting(self) -> bool:
        return self.removed or bool(self.pod["metadata"].get("deletionTimestamp"))

    @property
    def stopping(self) -> bool:
        """Deleted, or failed as a whole (deadline exceeded): no container starts any more."""
        return self.deleting or self.failure is not None

    def _deadline_timer(self) -> asyncio.TimerHandle | None:
        seconds = self.pod["spec"].get("activeDeadlineSeconds")
        if seconds is None:
            return None
        elapsed = (now() - self.start_time).total_seconds()
        return asyncio.get_running_loop().call_later(
            max(0.0, float(seconds) - elapsed), self._deadline_exceeded
        )

    def _deadline_exceeded(self) -> None:
        if self.stopping:
            return
        message = "Pod was active on the node longer than the specified deadline"
        self.failure = ("DeadlineExceeded", message)
        self.ctx.event(self.pod, EventType.NORMAL, "DeadlineExceeded", message)
        self.changed.set()

    @property
    def label(self) -> str:
        """``name_namespace(uid)``, as the kubelet names pods in messages."""
        return f"{self.name}_{self.namespace}({self.uid})"

    def log_file(self, container: str, *, previous: bool = False) -> tuple[Path, Callable[[], bool]]:
        """The log of the current (or previous) start of ``container`` and whether it still runs."""
        starts = self.starts.get(container, 0)
        states = {s.name: s for s in self.init + self.containers}
        if container not in states:
            raise InvalidInput(f"container {container} is not valid for pod {self.name}")
        index = starts - 2 if previous else starts - 1
        if index < 0:
            if previous:
                raise InvalidInput(
                    f'previous terminated container "{container}" in pod "{self.name}" not found'
                )
            state = states[container]
            raise InvalidInput(
                f'container "{container}" in pod "{self.name}" is waiting to start: {state.waiting_reason}'
            )
        path = self._log_path(container, index)
        if previous:
            return path, lambda: False
        return path, lambda: container in self.processes

    # -- the pod's life ------------------------------------------------------------------------

    async def run(self) -> None:
        await self.report()
        life = asyncio.ensure_future(self._live())
        deadline = self._deadline_timer()
        try:
            while not self.stopping:
                await self._wait_change(STATUS_RESYNC)
                await self.report()
            if not self.deleting:
                # activeDeadlineSeconds passed: the pod fails, its containers are stopped.
                await self._stop_all(float(self.pod["spec"].get("terminationGracePeriodSeconds") or 0))
                await asyncio.wait([life], timeout=5)
                await self.report()
                await self._until(lambda: self.deleting)
            await self._stop_all(self._grace())
            while not life.done():
                # A container that was starting when the deletion came: stop it too.
                await asyncio.wait([life], timeout=0.1)
                await self._stop_all(0)
            await self.report()
            await self._finalize()
        finally:
            if deadline is not None:
                deadline.cancel()
            life.cancel()
            await asyncio.gather(life, return_exceptions=True)
            await self._stop_all(0)
            self.ctx.sweep()
            if self.removed:
                shutil.rmtree(self.dir, ignore_errors=True)

    async def _live(self) -> None:
        """Volumes, init containers, containers: the pod's life until it ends or is deleted."""
        if await self._set_up() and await self._run_init():
            await self._run_containers()
        await self.report()

    async def _set_up(self) -> bool:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o755)
        while not self.stopping:
            try:
                self.refs = await inputs.fetch_refs(self.ctx.client, self.pod)
                tokens = await inputs.fetch_tokens(self.ctx.client, self.pod)
                self.volumes = hostvolumes.prepare(self.pod, self.dir, self._lookup, tokens=tokens)
            except hostvolumes.MountFailed as exc:
                self.ctx.event(self.pod, EventType.WARNING, "FailedMount", exc.message)
                await self._wait_change(MOUNT_RETRY)
                continue
            self.sandbox_ready = True
            await self.report()
            return True
        return False

    async def _run_init(self) -> bool:
        specs = {c["name"]: c for c in self.pod["spec"].get("initContainers") or []}
        for state in self.init:
            await self._container_life(specs[state.name], state, init=True)
            if self.stopping or state.exit_code != 0:
                return False
        return True

    async def _run_containers(self) -> None:
        specs = {c["name"]: c for c in self.pod["spec"].get("containers") or []}
        lives = [
            asyncio.ensure_future(self._container_life(specs[s.name], s, init=False)) for s in self.containers
        ]
        try:
            await asyncio.gather(*lives)
        finally:
            for life in lives:
                life.cancel()

    async def _container_life(self, spec: Mapping[str, Any], state: ContainerState, *, init: bool) -> None:
        """Start the container, wait for it, restart it as the policy says, until done or deleted."""
        policy = self.pod["spec"].get("restartPolicy") or "Always"
        backoff = self.ctx.restart_backoff
        while not self.stopping:
            try:
                self.refs = await inputs.fetch_refs(self.ctx.client, self.pod)
                launch: hostcontainers.LaunchSpec | hostcontainers.StartFailed = self._launch_spec(spec)
            except hostcontainers.StartFailed as exc:
                launch = exc
            except (InvalidInput, NotFound) as exc:
                state.waiting_reason, state.waiting_message = "CreateContainerConfigError", exc.message
                self.ctx.event(self.pod, EventType.WARNING, "Failed", f"Error: {exc.message}")
                await self.report()
                await self._wait_change(CONFIG_RETRY)
                continue
            await self._run_once(spec, state, launch)
            restart = policy == "Always" or (policy == "OnFailure" and state.exit_code != 0)
            if init:
                restart = policy != "Never" and state.exit_code != 0
            if not restart or self.stopping:
                return
            state.will_restart = True
            state.last_terminated = state.terminated_state()
            state.exit_code = state.started_at = state.finished_at = None
            state.waiting_reason = "CrashLoopBackOff"
            state.waiting_message = (
                f"back-off {int(backoff)}s restarting failed container={state.name} pod={self.label}"
            )
            self.ctx.event(
                self.pod,
                EventType.WARNING,
                "BackOff",
                f"Back-off restarting failed container {state.name} in pod {self.label}",
            )
            await self.report()
            await self._wait_change(backoff, until_stopped=True)
            backoff = min(backoff * 2, self.ctx.max_restart_backoff)
            state.restart_count += 1
            state.will_restart = False

    async def _run_once(
        self,
        spec: Mapping[str, Any],
        state: ContainerState,
        launch: hostcontainers.LaunchSpec | hostcontainers.StartFailed,
    ) -> None:
        index = self.starts[state.name]
        self.starts[state.name] += 1
        log = hostlogs.LogWriter(self._log_path(state.name, index))
        targets = (
            [m["target"] for m in launch.mounts] if isinstance(launch, hostcontainers.LaunchSpec) else []
        )
        self.ctx.in_use.update(targets)
        try:
            self.ctx.launching += 1
            try:
                if isinstance(launch, hostcontainers.StartFailed):
                    raise launch
                process = await hostcontainers.start(launch, log=log, scratch=self.dir)
            except hostcontainers.StartFailed as exc:
                self.ctx.created.update(exc.created)
                state.started_at = state.finished_at = now()
                state.exit_code, state.reason, state.message = (
                    hostcontainers.START_ERROR_EXIT,
                    "StartError",
                    exc.message,
                )
                self.ctx.event(self.pod, EventType.WARNING, "Failed", f"Error: {exc.message}")
                await self.report()
                return
            finally:
                # No await from here to in_use's update below: no sweep runs in between.
                self.ctx.launching -= 1
            # The mount points this container's launcher made (a kept image path under its
            # emptyDir, say) are in use while it runs: a sweep after another container's end
            # must not rmdir them, which would detach the binds inside this container.
            targets += process.created
            self.ctx.in_use.update(process.created)
            self.ctx.created.update(process.created)
            self.processes[state.name] = process
            state.container_id = f"wlmvk-host://{self.uid}/{state.name}/{index}"
            state.started_at, state.exit_code, state.reason, state.message = (
                now(),
                None,
                "",
                "",
            )
            self.ctx.event(self.pod, EventType.NORMAL, "Created", f"Created container {state.name}")
            self.ctx.event(self.pod, EventType.NORMAL, "Started", f"Started container {state.name}")
            await self.report()
            try:
                code = await process.wait()
            except asyncio.CancelledError:
                process.signal(signal.SIGKILL)
                raise
            finally:
                self.processes.pop(state.name, None)
            state.finished_at = now()
            state.exit_code, state.reason = code, hostpodstatus.terminated_reason(code)
            if code != 0 and spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
                state.message = hostlogs.tail_text(log.path)
            await self.report()
        finally:
            log.close()
            self.ctx.in_use.subtract(targets)
            self.ctx.sweep()

    async def _until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await self._wait_change(None)

    async def _wait_change(self, timeout: float | None, *, until_stopped: bool = False) -> None:
        """Wait for a change of the pod (or ``timeout``); with ``until_stopped``, ignore other changes."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            self.changed.clear()
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self.changed.wait()
            if not until_stopped or self.stopping:
                return

    def _grace(self) -> float:
        if self.removed:
            return 1.0
        return float(self.pod["metadata"].get("deletionGracePeriodSeconds") or 0)

    async def _stop_all(self, grace: float) -> None:
        """SIGTERM every running container, SIGKILL what is left after ``grace`` seconds."""
        if not self.processes:
            return
        for name, process in list(self.processes.items()):
            if grace > 0:
                self.ctx.event(self.pod, EventType.NORMAL, "Killing", f"Stopping container {name}")
            process.signal(signal.SIGTERM if grace > 0 else signal.SIGKILL)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self.processes and loop.time() < deadline:
            await asyncio.sleep(0.05)
        for process in list(self.processes.values()):
            process.signal(signal.SIGKILL)
        deadline = loop.time() + 5
        while self.processes and loop.time() < deadline:
            await asyncio.sleep(0.02)

    async def _finalize(self) -> None:
        """The kubelet's last word: delete with grace 0 so the API server removes the pod."""
        if self.removed:
            return
        try:
            await self.ctx.client.delete(
                PODS, self.name, namespace=self.namespace, grace_period_seconds=0, uid=self.uid
            )
        except WlmvkError as exc:
            _log.debug("final delete failed", pod=self.label, error=exc.message)

    # -- status ----------------------------------------------------------------------------------

    def status(self) -> Obj:
        """The pod's status as this worker sees it now."""
        return hostpodstatus.pod_status(
            {**self.pod, "status": self.written or self.pod.get("status") or {}},
            init=self.init,
            containers=self.containers,
            sandbox_ready=self.sandbox_ready,
            host_ip=self.ctx.host_ip,
            start_time=self.start_time,
            now=now(),
            failure=self.failure,
        )

    async def report(self) -> None:
        """Write the pod's status through ``pods/{name}/status`` if it changed."""
        status = self.status()
        if status == self.written:
            return
        patch = {"metadata": {"uid": self.uid}, "status": status}
        try:
            await self.ctx.client.patch_status(PODS, self.name, patch, namespace=self.namespace)
        except WlmvkError as exc:
            _log.info("status update failed", pod=self.label, error=exc.message)
            return
        self.written = status

    # -- helpers ---------------------------------------------------------------------------------

    def _log_path(self, container: str, index: int) -> Path:
        return (
            self.ctx.root / "logs" / f"{self.namespace}_{self.name}_{self.uid}" / container / f"{index}.log"
        )

    def _lookup(self, kind: str, name: str) -> Obj | None:
        return self.refs.get((kind, name))

    def _launch_spec(self, spec: Mapping[str, Any]) -> hostcontainers.LaunchSpec:
        # fieldRefs see the status this worker has written (podIP, hostIP).
        pod = {**self.pod, "status": self.written or self.pod.get("status") or {}}
        return inputs.launch_spec(
            self.ctx, pod, spec, label=self.label, volumes=self.volumes, lookup=self._lookup
        )
