"""What every pod worker of one host kubelet shares, and the mount points its launchers made.

:class:`HostContext` carries the client, the node's name and address, directories, timings,
images and the kubelet's Event queue. Launchers (``launch.py``) make mount points on the host
for bind mounts; :meth:`HostContext.sweep` removes those no running container, and no mount
in any mount namespace of this machine, uses any more.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from wlmvk.kube.bodies import Body
from wlmvk.kube.client import KubeClient
from wlmvk.kube.events import EventQueue

Obj = Body


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
