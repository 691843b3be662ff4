"""The README's main command: `wlmvk dev up` runs the examples on the whole local system.

It starts real Slurm, two red-box daemons as the job owner, the API server,
two kubelets and the operator, runs the examples of a directory (examples/ unless
``--examples``) plus one SlurmJob per cluster, and stops everything it started.

Here the directory holds the README's example alone: every example of examples/ already runs
end to end in tests/e2e/operator (test_examples, test_readme); the subject here is the demo's
own start, its report and its cleanup. On the in-memory plane it runs with ``--tenants`` too:
two tenants on its own enforcing Slurm, each pod's job as its tenant's user, account and QoS in
``sacct`` (the rules themselves are tests/e2e/tenancy's subject); the two tenant users are Unix
users the demo makes for its run (``tenantusers``), there while it runs and gone after.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REAL_GROUP
from tests.fixtures.shared_dirs import SharedDir
from wlmvk_dev.demo.clusters import SOCKET_DIR
from wlmvk_dev.demo.tenantusers import MARK, USERS, site_slurm

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl]

WLMVK = str(Path(sys.executable).parent / "wlmvk")
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _free_port() -> int:
    """A port free with the five after it (the demo's own control plane uses them)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port < 60000 and all(_free(port + n) for n in range(1, 6)):
            return port


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def run_demo(shared_dir: SharedDir, *options: str) -> tuple[str, Path]:
    """``wlmvk dev up OPTIONS`` to its end: (what it printed, its state directory)."""
    # The job owner (uid 1000) must reach the state dir; pytest's tmp_path is root's alone.
    state = shared_dir("wlmvk-demo-test-", 0o700)
    proc = subprocess.run(
        [WLMVK, "dev", "up", "--state-dir", str(state), "--port", str(_free_port()), *options],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-12000:] + proc.stderr[-2000:]
    return out, state


def readme_example_only(shared_dir: SharedDir) -> Path:
    """A directory of examples with the README's example alone."""
    readme_only = shared_dir("wlmvk-demo-examples-")
    shutil.copy(EXAMPLES / "prepare-and-results.yaml", readme_only)
    return readme_only


def assert_the_user_sees_every_example_end(out: str) -> list[str]:
    """The examples' outcome as the user is shown it; returns the progress lines."""
    assert "all examples ended as expected" in out
    # What the user is shown: both clusters' nodes, the README session, the collected results.
    assert "slurm-minikube-cpu" in out
    assert "slurm-second-cpu" in out
    readme = out[out.index("kubectl logs prepare-and-results-job") :]
    assert readme.splitlines()[1] == "Hello"
    assert "output.txt" in out
    assert "Hello from Slurm job" in out
    # One progress line per step, with elapsed time.
    steps = [line for line in out.splitlines() if line.startswith("[")]
    assert any("red-box for second" in line for line in steps)
    assert steps[-1].endswith("all examples ended as expected")
    return steps


def sacct_of_tenant_pods(out: str) -> dict[str, tuple[str, list[str]]]:
    """Namespace -> (what its pod printed, its job's row as sacct printed it), as the user is shown."""
    shown = {}
    for namespace in ("team-a", "team-b"):
        logs = out[out.index(f"$ kubectl logs -n {namespace} whoami") :].splitlines()
        sacct = out[out.index("$ sacct -X -j", out.index(f"$ kubectl logs -n {namespace} whoami")) :]
        lines = sacct.splitlines()
        assert lines[0].endswith(" -o JobID,User,Account,QOS,Partition"), lines[0]
        assert lines[1].split() == ["JobID", "User", "Account", "QOS", "Partition"], lines[1]
        shown[namespace] = (logs[1], lines[3].split())
    return shown


# Both demos put red-box's sockets at the default /var/run/syslurm/red-box*.sock, so they never
# run at once: this one runs on the worker of the real plane's tests, where the other one runs.
@pytest.mark.xdist_group(REAL_GROUP)
@pytest.mark.timeout(900)
@pytest.mark.skipif(os.geteuid() != 0, reason="the demo starts daemons as root")
@pytest.mark.skipif(
    site_slurm() is not None, reason="a site's Slurm runs here: the demo makes no tenant user"
)
def test_demo_runs_the_examples_and_stops_what_it_started(slurm: str, shared_dir: SharedDir) -> None:
    user_a, user_b = USERS
    for user in USERS:
        with pytest.raises(KeyError):
            pwd.getpwnam(user)  # not there before the demo
    out, state = run_demo(shared_dir, "--tenants", "--examples", str(readme_example_only(shared_dir)))
    steps = assert_the_user_sees_every_example_end(out)
    # The demo made its two tenant users and showed them: they existed while it ran.
    for user in USERS:
        shown_id = out[out.index(f"$ id {user}\n") :].splitlines()[1]
        assert re.fullmatch(rf"uid=\d+\({user}\) gid=\d+\({user}\) groups=\d+\({user}\)", shown_id), shown_id
    # Each tenant's pod ran as its tenant's user, and sacct says so, with its account and QoS.
    shown = sacct_of_tenant_pods(out)
    job_a, job_b = shown["team-a"][1][0], shown["team-b"][1][0]
    assert shown == {
        "team-a": (user_a, [job_a, user_a, "physics", "qos-phys", "cpu"]),
        "team-b": (user_b, [job_b, user_b, "chemistry", "qos-chem", "cpu"]),
    }
    assert job_a != job_b
    # Everything it started is gone, and it says so.
    assert not list((state / "pids").glob("*.pid"))
    assert any(line.endswith(")") and "] tenants removed (" in line for line in steps)
    stopped = next(line for line in steps if "stopped:" in line)
    for name in ("apiserver", "operator", "kubelet-minikube", "kubelet-second", "red-box-minikube"):
        assert name in stopped
    for name in (f"red-box-tenant-{user_a}", f"red-box-tenant-{user_b}", "the tenants' Slurm"):
        assert name in stopped
    assert f"the tenant users (userdel {user_a} {user_b})" in stopped
    assert not list(SOCKET_DIR.glob("tenant-*"))
    # ``down`` removed them: no such user is left, nor anything marked as the demo's.
    for user in USERS:
        with pytest.raises(KeyError):
            pwd.getpwnam(user)
    assert [p.pw_name for p in pwd.getpwall() if p.pw_gecos == MARK] == []


@pytest.mark.kube_real
@pytest.mark.timeout(900)
@pytest.mark.skipif(os.geteuid() != 0, reason="the demo starts daemons as root")
def test_demo_on_a_real_control_plane_runs_the_manifests_pods(
    slurm: str, real_kube: object, shared_dir: SharedDir
) -> None:
    # real_kube: the control plane is built (the demo starts one of its own from the same build).
    # The subject here is the demo's own in-cluster deployment and its cleanup.
    out, state = run_demo(shared_dir, "--kube", "real", "--examples", str(readme_example_only(shared_dir)))
    steps = assert_the_user_sees_every_example_end(out)
    assert any("configurator DaemonSet and operator Deployment running" in line for line in steps)
    pods = out[out.index("kubectl get pods -n wlmvk -o wide") :]
    assert "wlmvk-configurator-" in pods
    assert pods.count("wlmvk-operator-") == 2
    assert not list((state / "pids").glob("*.pid"))
    stopped = next(line for line in steps if "stopped:" in line)
    for name in ("node", "kubelet-second", "red-box-minikube", "the control plane"):
        assert name in stopped
