"""The local Slurm beside a site's: a login node's /etc/slurm, /etc/munge and munged stay as they were.

Each test runs in a private mount namespace (``unshare --mount``) where tmpfs
covers /etc/slurm, /etc/munge and munged's directories, holding a fake site's
slurm.conf, gres.conf and munge key and a "site" munged on the default socket
(site.sh): nothing of the real host's is written. In it ``dev/scripts/slurm-local``
comes up in a fresh base directory on free ports (so it also runs beside the
machine's other local Slurms), runs a job as the job owner and goes down; or
the demo (``wlmvk dev up``, what scripts/demo runs) brings it up and runs the
README's example on it (every example runs end to end in tests/e2e/operator).
Afterwards the site's files are byte for byte what they were, the site's
munged still answers, and no process of that Slurm is left.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.shared_dirs import SharedDir

HERE = Path(__file__).resolve().parent
WLMVK = str(Path(sys.executable).parent / "wlmvk")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="mounts a namespace and starts daemons as root"),
    pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)"),
    pytest.mark.skipif(
        shutil.which("slurmctld") is None, reason="needs Slurm (dev/scripts/slurm-local up once)"
    ),
]

SITE_SLURM_CONF = b"""# The site's own cluster: a login node's config that nothing of wlmvk may touch.
ClusterName=site
SlurmctldHost=site-head(10.1.2.3)
SlurmctldPort=6817
AuthType=auth/munge
NodeName=site-n[001-100] CPUs=64 State=UNKNOWN
PartitionName=batch Nodes=site-n[001-100] Default=YES MaxTime=2-00:00:00 State=UP
"""
SITE_GRES_CONF = b"NodeName=site-n[001-100] Name=gpu File=/dev/nvidia[0-3]\n"
SITE_MUNGE_KEY = bytes(range(256)) * 4


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on loopback now (held together, so never the same twice)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def fake_site(directory: Path) -> None:
    slurm, munge = directory / "site" / "etc-slurm", directory / "site" / "etc-munge"
    slurm.mkdir(parents=True)
    munge.mkdir(parents=True)
    (slurm / "slurm.conf").write_bytes(SITE_SLURM_CONF)
    (slurm / "gres.conf").write_bytes(SITE_GRES_CONF)
    (munge / "munge.key").write_bytes(SITE_MUNGE_KEY)


def tree(root: Path) -> dict[str, tuple[bytes, int, int, int]]:
    """Every file under ``root``: its bytes, mode, owner and group."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        content = path.read_bytes() if path.is_file() else b""
        found[str(path.relative_to(root))] = (content, info.st_mode, info.st_uid, info.st_gid)
    return found


def processes_naming(text: str) -> list[str]:
    """Processes whose command line or environment mentions ``text`` (this Slurm's base directory)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            seen = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
        except OSError:
            continue
        if text.encode() in seen:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{proc.name}: {command}")
    return found


def in_site_namespace(
    directory: Path, base: Path, *command: str, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``command`` in a private mount namespace over the fake site, with its own Slurm base and ports."""
    ctld, slurmd, dbd, db = free_ports(4)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("SLURM_CONF", "WLMVK_SLURM_BASE")},
        "WLMVK_SLURM_BASE": str(base),
        "WLMVK_SLURM_CTLD_PORT": str(ctld),
        "WLMVK_SLURM_SLURMD_PORT": str(slurmd),
        "WLMVK_SLURM_DBD_PORT": str(dbd),
        "WLMVK_SLURM_DB_PORT": str(db),
    }
    argv = ["unshare", "--mount", "--propagation", "private", str(HERE / "site.sh"), str(directory)]
    done = subprocess.run(
        [*argv, *command], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    return done


def assert_site_untouched(directory: Path, base: Path) -> None:
    before, after = tree(directory / "before"), tree(directory / "after")
    assert set(before) == {"slurm", "slurm/slurm.conf", "slurm/gres.conf", "munge", "munge/munge.key"}
    assert before["slurm/slurm.conf"][0] == SITE_SLURM_CONF
    assert before["munge/munge.key"][0] == SITE_MUNGE_KEY
    assert after == before
    assert (directory / "site-munged").read_text() == "alive\n"
    assert processes_naming(str(base)) == []


def test_slurm_local_runs_a_job_beside_a_site_and_leaves_it_as_it_was(
    shared_dir: SharedDir, tmp_path: Path
) -> None:
    base = shared_dir("wlmvk-iso-slurm-")
    fake_site(tmp_path)
    out = tmp_path / "out"
    out.mkdir()

    done = in_site_namespace(tmp_path, base, str(HERE / "flow.sh"), str(out), timeout=300)

    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert (out / "state.txt").read_text() == "JobState=COMPLETED\n"
    assert (out / "job.out").read_text() == f"conf={base}/etc/slurm.conf\nstep-ran\n"
    assert_site_untouched(tmp_path, base)


@pytest.mark.kubectl
@pytest.mark.timeout(900)
def test_the_demo_beside_a_site_runs_its_example_and_leaves_the_site_as_it_was(
    shared_dir: SharedDir, tmp_path: Path
) -> None:
    base = shared_dir("wlmvk-iso-slurm-")
    # The job owner (uid 1000) must reach the demo's state dir; tmp_path is root's alone.
    state = shared_dir("wlmvk-iso-demo-", 0o700)
    fake_site(tmp_path)
    out = tmp_path / "demo.out"
    (port,) = free_ports(1)
    examples = shared_dir("wlmvk-iso-examples-")
    shutil.copy(HERE.parents[2] / "examples" / "prepare-and-results.yaml", examples)

    done = in_site_namespace(
        tmp_path,
        base,
        str(HERE / "demo.sh"),
        WLMVK,
        str(state),
        str(port),
        str(out),
        str(examples),
        timeout=900,
    )

    shown = out.read_text()
    assert "all examples ended as expected" in shown, f"{shown[-6000:]}\nlogs: {out}.logs"
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert_site_untouched(tmp_path, base)
