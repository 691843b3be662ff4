"""What the demo runs: its two clusters (a red-box and a kubelet each), the job owner, the image."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
JOB_UID = 1000
SOCKET_DIR = Path("/var/run/syslurm")
IMAGE = "wlmvk:latest"
"""The manifests' image; on the real plane the host node runs this checkout's wlmvk for it."""
RED_BOX_LABEL = "wlm.sylabs.io/red-box"


@dataclass(frozen=True)
class Cluster:
    """One red-box + kubelet pair: a Slurm "cluster" as Kubernetes sees it."""

    name: str
    socket: Path
    # 0: any free port (the node's daemonEndpoints say which).
    kubelet_port: int
    metrics_port: int
    config: str


CLUSTERS = (
    Cluster("minikube", SOCKET_DIR / "red-box.sock", 0, 0, ""),
    Cluster(
        "second",
        SOCKET_DIR / "red-box-second.sock",
        0,
        0,
        "cpu:\n  wall_time: 30m\n  additional_features:\n    - name: singularity\n      version: 3.2.0\n",
    ),
)
