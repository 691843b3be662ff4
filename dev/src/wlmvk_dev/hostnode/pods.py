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
its volumes are set up and before each container start.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import signal
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from wlmvk.core.errors import InvalidInput, NotFound, WlmvkError
from wlmvk.core.names import EventType
from wlmvk.kube.bodies import PODS, Body, Resource
from wlmvk.kube.client import KubeClient
from wlmvk.kube.events import EventQueue
from wlmvk_dev.hostnode import containers as hostcontainers
from wlmvk_dev.hostnode import env as podenv
from wlmvk_dev.hostnode import logs as hostlogs
from wlmvk_dev.hostnode import podstatus as hostpodstatus
from wlmvk_dev.hostnode import volumes as hostvolumes
from wlmvk_dev.hostnode.podstatus import ContainerState

_log = structlog.get_logger(__name__)

MOUNT_RETRY = 2.0
CONFIG_RETRY = 2.0
STATUS_RESYNC = 5.0
"""Seconds between a live pod's status checks: a write that failed (a control plane just started
answers 503 for a while) is made again, as the kubelet's status manager resyncs."""

Obj = Body
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")
SECRETS = Resource("", "v1", "secrets", kind="Secret")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", kind="ServiceAccount")


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class HostContext:
    """What every pod worker of one host kubelet shares."""

    client: KubeClient
    node_name: str
    host_ip: str
    root: Path
    path: str
    isolation: str
    restart_backoff: float
    max_restart_backoff: float
    events: EventQueue
    allocatable: Mapping[str, str]
    images: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    image_paths: tuple[str, ...] = ()
    service_env: Mapping[str, str] = field(default_factory=dict)
    in_use: Counter[str] = field(default_factory=Counter)
    """Mount targets of running containers, and the mount points (host paths) their launchers made."""
    created: set[str] = field(default_factory=set)
    launching: int = 0
    """Launchers at work: the mount points they make are not known (nor in use) until they end."""

    def event(self, pod: Obj, type: str, reason: str, message: str) -> None:
        """Record a kubelet Event about ``pod`` (sent in the background)."""
        self.events.record(
            {**pod, "apiVersion": "v1", "kind": "Pod"}, type=type, reason=reason, message=message
        )

    def sweep(self) -> None:
        """Remove the mount points launchers created that no running container uses any more.

        A path still mounted in some mount namespace (a container of another host
        kubelet, maybe in another process) is kept: removing it would detach that mount.
        """
        if self.launching:
            # A launcher may have just made a mount point (say, under a pod's emptyDir) and be
            # about to bind on it: removing it now would detach that bind. The last one sweeps.
            return
        mounted: set[str] | None = None
        for path in sorted(self.created, key=len, reverse=True):
            if any(
                t == path or t.startswith(path.rstrip("/") + "/") for t, n in self.in_use.items() if n > 0
            ):
                continue
            mounted = mount_points() if mounted is None else mounted
            if holds_a_mount(path, mounted):
                continue
            self.created.discard(path)
            with contextlib.suppress(OSError):
                if os.path.islink(path) or (os.path.isfile(path) and os.path.getsize(path) == 0):
                    os.unlink(path)
                elif os.path.isdir(path):
                    os.rmdir(path)


def holds_a_mount(path: str, mounted: set[str]) -> bool:
    """Whether ``path`` is, or has below it, one of the ``mounted`` points.

    The kernel names a mount point by its real path: a point made at
    ``/var/run/x`` shows as ``/run/x`` where ``/var/run`` links to ``/run``, so
    ``path``'s directory is resolved first (not ``path`` itself: a symbolic link
    a launcher made there is the point, not where it leads).
    """
    parent, name = os.path.split(path.rstrip("/") or "/")
    real = os.path.join(os.path.realpath(parent), name) if name else "/"
    for candidate in {path.rstrip("/") or "/", real}:
        inside = candidate.rstrip("/") + "/"
        if any(m == candidate or m.startswith(inside) for m in mounted):
            return True
    return False


def mount_points() -> set[str]:
    """Every mount point of every mount namespace on this machine (as seen from its root)."""
    seen_namespaces: set[str] = set()
    points: set[str] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            namespace = os.readlink(f"/proc/{entry.name}/ns/mnt")
            if namespace in seen_namespaces:
                continue
            seen_namespaces.add(namespace)
            with open(f"/proc/{entry.name}/mountinfo") as f:
                for line in f:
                    fields = line.split(" ")
                    if len(fields) > 4:
                        points.add(fields[4].replace("\\040", " "))
        except OSError:
            continue
    return points


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
                await self._fetch_refs()
                tokens = await self._fetch_tokens()
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
                await self._fetch_refs()
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

    async def _fetch_tokens(self) -> dict[tuple[str, int], str]:
        """A TokenRequest bound to the pod for each projected ServiceAccount token it mounts."""
        account = self.pod["spec"].get("serviceAccountName") or "default"
        path = SERVICEACCOUNTS.path(namespace=self.namespace, name=account, subresource="token")
        tokens: dict[tuple[str, int], str] = {}
        for audience, seconds in sorted(hostvolumes.token_requests(self.pod)):
            spec: Body = {
                "expirationSeconds": seconds,
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": self.name, "uid": self.uid},
            }
            if audience:
                spec["audiences"] = [audience]
            body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
            try:
                answer = await self.ctx.client.request("POST", path, body=body)
            except WlmvkError as exc:
                raise hostvolumes.MountFailed(
                    f"MountVolume.SetUp failed: failed to fetch token: {exc.message}"
                ) from exc
            tokens[audience, seconds] = str((answer.get("status") or {}).get("token", ""))
        return tokens

    async def _fetch_refs(self) -> None:
        """Read the ConfigMaps and Secrets the pod refers to (missing ones are None)."""
        refs: dict[tuple[str, str], Obj | None] = {}
        for kind, name in sorted(podenv.references(self.pod)):
            resource = CONFIGMAPS if kind == "configmaps" else SECRETS
            try:
                refs[kind, name] = await self.ctx.client.get(resource, name, namespace=self.namespace)
            except NotFound:
                refs[kind, name] = None
        self.refs = refs

    def _launch_spec(self, spec: Mapping[str, Any]) -> hostcontainers.LaunchSpec:
        pod_security = self.pod["spec"].get("securityContext") or {}
        security = {**pod_security, **(spec.get("securityContext") or {})}
        uid = security.get("runAsUser")
        account = _account(uid)
        if security.get("runAsNonRoot") and not uid:
            where = f'(pod: "{self.label}", container: {spec["name"]})'
            raise InvalidInput(f"container has runAsNonRoot and image will run as root {where}")
        gid = security.get("runAsGroup")
        if gid is None and uid is not None:
            gid = account.pw_gid if account is not None else 0
        groups: list[int] = []
        if uid is not None:
            groups = [int(gid or 0)]
            if account is not None:
                groups += os.getgrouplist(account.pw_name, account.pw_gid)
            groups += [int(g) for g in pod_security.get("supplementalGroups") or []]
            if pod_security.get("fsGroup") is not None:
                groups.append(int(pod_security["fsGroup"]))
            groups = list(dict.fromkeys(groups))
        home = account.pw_dir if account is not None else ("/root" if uid in (None, 0) else "/")
        base = {
            **self.ctx.service_env,
            "PATH": self.ctx.path,
            "HOSTNAME": self.pod["spec"].get("hostname") or self.name,
            "HOME": home,
        }
        # fieldRefs see the status this worker has written (podIP, hostIP).
        pod = {**self.pod, "status": self.written or self.pod.get("status") or {}}
        node = self.ctx.allocatable
        env = podenv.container_env(pod, spec, self._lookup, base=base, node_allocatable=node)
        try:
            argv = podenv.command_line(spec, env, self.ctx.images)
        except InvalidInput as exc:
            raise hostcontainers.StartFailed(exc.message, []) from exc
        mounts = hostvolumes.container_mounts(spec, self.volumes, env)
        return hostcontainers.LaunchSpec(
            argv=argv,
            env=env,
            cwd=spec.get("workingDir") or None,
            uid=None if uid is None else int(uid),
            gid=None if gid is None else int(gid),
            groups=groups,
            mounts=mounts,
            isolation=self.ctx.isolation,
            keep=list(self.ctx.image_paths) if podenv.runs_image(spec, self.ctx.images) else [],
        )


def _account(uid: Any) -> pwd.struct_passwd | None:
    if uid is None:
        uid = os.getuid()
    try:
        return pwd.getpwuid(int(uid))
    except (KeyError, ValueError):
        return None
