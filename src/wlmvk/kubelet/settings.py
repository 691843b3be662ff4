"""The kubelet's settings: a frozen dataclass (``flags.py`` fills it from the command line).

One process serves one cluster (``cluster_name``, ``red_box_socket``), or several (``clusters``,
from ``--cluster NAME=SOCKET``): ``served()`` gives each served cluster's own settings.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from wlmvk.core import names, runtimes
from wlmvk.kubelet.api.auth import gate

# Not 10255: that is the real kubelet's legacy read-only port, which another
# kubelet on the host may still hold.
DEFAULT_METRICS_PORT = 10262


@dataclass(frozen=True)
class ClusterSettings:
    """One cluster of a kubelet serving several: its name, its red-box, its tenants' red-boxes."""

    name: str
    red_box_socket: str
    red_boxes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Settings:
    red_box_socket: str = names.DEFAULT_RED_BOX_SOCKET
    red_boxes: tuple[tuple[str, str], ...] = ()
    """(user, socket): the red-box of each SlurmTenant user (docs/tenancy.md)."""
    kubeconfig: str | None = None
    cluster_name: str = ""
    agent_host: str = ""
    node_ip: str = "127.0.0.1"
    listen_host: str = "0.0.0.0"
    port: int = 10250
    metrics_host: str = "127.0.0.1"
    metrics_port: int = DEFAULT_METRICS_PORT
    tls_cert: str = ""
    tls_key: str = ""
    client_ca: str = ""
    anonymous_auth: bool = False
    authentication_token_webhook: bool = True
    authorization_mode: str = gate.WEBHOOK
    status_interval: float = 5.0
    stats_interval: float = 10.0
    discovery_interval: float = 30.0
    node_status_interval: float = 60.0
    lease_duration: int = 40
    lease_renew_interval: float = 10.0
    max_pods: int = 1000
    jobs_root: str = "pods"
    gpu_names: tuple[tuple[str, str], ...] = ()
    """The site's GPU extended resource names -> Slurm GRES types (core.gpus)."""
    sif_gpu_flags: tuple[str, ...] = runtimes.GPU_FLAGS
    """The SIF runtime's flags for a plain pod's image with GPUs (core.runtimes.gpu_flags)."""
    workers: int = 32
    submissions: int = 16
    websockets_to_kubelet: bool = True
    """Nodes declare ExtendWebSocketsToKubelet on v1.36+ API servers (wlmvk.kube.version)."""
    wlm_timeout: float = 30.0
    log_level: str = "info"
    leader_elect: bool = False
    leader_lease_duration: int = 15
    leader_renew_interval: float = 5.0
    leader_retry_interval: float = 2.0
    clusters: tuple[ClusterSettings, ...] = ()
    """Every cluster served when several are (``--cluster``); empty: the one of ``cluster_name``."""

    def served(self) -> tuple[Settings, ...]:
        """The settings of each cluster served: this one's alone, or one per ``clusters`` entry."""
        if not self.clusters:
            return (self,)
        return tuple(
            replace(
                self, cluster_name=c.name, red_box_socket=c.red_box_socket, red_boxes=c.red_boxes, clusters=()
            )
            for c in self.clusters
        )
