"""The README's main command: `wlmvk dev up` runs every example on the whole local system.

It starts real Slurm, two red-box daemons as the job owner, the API server,
two kubelets and the operator, runs examples/ plus one SlurmJob per cluster,
and stops everything it started.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl]

WLMVK = str(Path(sys.executable).parent / "wlmvk")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.skipif(os.geteuid() != 0, reason="the demo starts daemons as root")
def test_demo_runs_every_example_and_stops_what_it_started(slurm: str) -> None:
    # The job owner (uid 1000) must reach the state dir; pytest's tmp_path is root's alone.
    state = Path(tempfile.mkdtemp(prefix="wlmvk-demo-test-", dir="/var/tmp"))
    proc = subprocess.run(
        [WLMVK, "dev", "up", "--state-dir", str(state), "--port", str(_free_port())],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-2000:]
    assert "all examples ended as expected" in out
    # What the user is shown: both clusters' nodes, the README session, the collected results.
    assert "slurm-minikube-cpu" in out
    assert "slurm-second-cpu" in out
    readme = out[out.index("$ kubectl logs prepare-and-results-job") :]
    assert readme.splitlines()[1] == "Hello"
    assert "output.txt" in out
    assert "Hello from Slurm job" in out
    # One progress line per step, with elapsed time.
    steps = [line for line in out.splitlines() if line.startswith("[")]
    assert any("red-box for second" in line for line in steps)
    assert steps[-1].endswith("all examples ended as expected")
    # Everything it started is gone, and it says so.
    assert not list((state / "pids").glob("*.pid"))
    stopped = next(line for line in steps if "stopped:" in line)
    for name in ("apiserver", "operator", "kubelet-minikube", "kubelet-second", "red-box-minikube"):
        assert name in stopped
