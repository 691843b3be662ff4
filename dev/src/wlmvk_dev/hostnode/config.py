"""What one host node is: name, labels, taints, address, port, directories, timings (and flag syntax)."""

from __future__ import annotations

import shlex
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from wlmvk_dev.hostnode import env


def default_node_name() -> str:
    return socket.gethostname().split(".")[0].lower()


def default_path() -> str:
    """The project's virtualenv first (so ``wlmvk`` is found, as in the project's image), then the usual."""
    return f"{Path(sys.executable).parent}:{env.DEFAULT_PATH}"


@dataclass(frozen=True)
class NodeConfig:
    node_name: str = field(default_factory=default_node_name)
    """Node name (default: this machine's short host name, lowercased)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra node labels (e.g. to mark the agent host)."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    address: str = "127.0.0.1"
    """The node's InternalIP, where the kubelet API listens, also the pods' hostIP and podIP."""
    kubelet_port: int = 10250
    """The kubelet API's port (0: a free one); the port really served is advertised in the Node."""
    tls_cert: str = ""
    tls_key: str = ""
    """The kubelet API's certificate and key (default: self-signed at start)."""
    root: str | None = None
    """Pod directories and logs (default: a fresh directory under /tmp, removed on stop)."""
    path: str = field(default_factory=default_path)
    isolation: str = "auto"
    """Volumes: ``auto`` (mount namespace, else symlinks), ``namespace`` or ``symlink``."""
    max_pods: int = 110
    lease_duration_seconds: int = 40
    renew_interval: float = 10.0
    status_interval: float = 60.0
    """Seconds between node status heartbeats (the Lease is the frequent one)."""
    restart_backoff: float = 10.0
    max_restart_backoff: float = 300.0
    images: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Image -> the local program standing in for its entrypoint (nothing is pulled)."""
    image_paths: tuple[str, ...] = ()
    """Host paths that program needs (its checkout, its virtualenv): the stand-in for the image's
    own files, visible to it where they are even when a volume covers them (an emptyDir on /tmp)."""
    service_env: Mapping[str, str] = field(default_factory=dict)
    """The ``kubernetes`` Service's variables every container gets (KUBERNETES_SERVICE_HOST...)."""


def parse_image(text: str) -> tuple[str, tuple[str, ...]]:
    """``IMAGE=COMMAND`` (COMMAND split as a shell would) as (image, entrypoint); ``ValueError`` if wrong."""
    image, eq, command = text.partition("=")
    argv = tuple(shlex.split(command))
    if not eq or not image or not argv:
        raise ValueError(f"--image {text!r}: want IMAGE=COMMAND, e.g. wlmvk:latest=/usr/local/bin/wlmvk")
    return image, argv


def service_env(server: str) -> dict[str, str]:
    """The variables a kubelet gives every container for the ``kubernetes`` Service.

    A real kubelet writes the Service's ClusterIP, which kube-proxy forwards to the API server;
    no kube-proxy runs beside a host node, so they name the API server's own address, the one
    in-cluster clients (client-go, kubernetes_asyncio) then reach with the pod's token.
    """
    url = urlsplit(server)
    host = url.hostname or "127.0.0.1"
    port = str(url.port or (443 if url.scheme == "https" else 80))
    bracketed = f"[{host}]" if ":" in host else host
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
        "KUBERNETES_SERVICE_PORT_HTTPS": port,
        "KUBERNETES_PORT": f"tcp://{bracketed}:{port}",
        f"KUBERNETES_PORT_{port}_TCP": f"tcp://{bracketed}:{port}",
        f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
        f"KUBERNETES_PORT_{port}_TCP_PORT": port,
        f"KUBERNETES_PORT_{port}_TCP_ADDR": host,
    }


def parse_labels(text: str) -> dict[str, str]:
    """``k=v,k2=v2`` (a key without ``=`` gets the empty value) as a mapping."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    return dict(item.partition("=")[::2] for item in items)


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def parse_taints(text: str) -> tuple[dict[str, str], ...]:
    """``key=value:Effect,key:Effect`` (kubectl taint's syntax) as Node taints; ``ValueError`` if wrong."""
    taints = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        pair, _, effect = item.rpartition(":")
        if not pair or effect not in TAINT_EFFECTS:
            raise ValueError(f"taint {item!r}: want key[=value]:{'|'.join(TAINT_EFFECTS)}")
        key, _, value = pair.partition("=")
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        taints.append(taint)
    return tuple(taints)
