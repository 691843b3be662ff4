"""The job owner: made if missing (``ensure_job_owner``), and a ``wlmvk`` it can run, for
red-box and the staging pods run as that user.

The virtualenv's interpreter may live where only root can reach it (pyenv under /root):
then a small wrapper runs the same checkout and packages with the system's Python of the
same minor version.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

from wlmvk_dev import localslurm
from wlmvk_dev.demo.clusters import CLUSTERS, JOB_UID, ROOT, SOCKET_DIR


def wlmvk_for(user: str, wlmvk: str, state: Path) -> str:
    """A ``wlmvk`` that ``user`` can run.

    The virtualenv's interpreter may live where only root can reach it
    (pyenv under /root): then a small wrapper runs the same checkout and
    packages with the system's Python of the same minor version.
    """
    if runs_as(user, wlmvk) == "":
        return wlmvk
    python = system_python()
    paths = checkout_paths()
    wrapper = state / "bin" / "wlmvk"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(
        "#!/bin/sh\n# Written by wlmvk dev up: the checkout's wlmvk for users who cannot reach .venv.\n"
        f"PYTHONPATH={':'.join(paths)} exec {python} -c "
        "'import sys; from wlmvk.cli import main; sys.exit(main(sys.argv[1:]))' \"$@\"\n"
    )
    wrapper.chmod(0o755)
    for directory in (state, wrapper.parent):
        directory.chmod(0o755)
    problem = runs_as(user, str(wrapper))
    if problem:
        raise RuntimeError(f"{user} cannot run {wrapper} (is --state-dir reachable by {user}?): {problem}")
    return str(wrapper)


def checkout_paths() -> list[str]:
    """Where this checkout's wlmvk runs from: its sources and the packages it imports."""
    return [str(ROOT / "src"), *(p for p in sys.path if p.endswith("site-packages"))]


def runs_as(user: str, program: str) -> str:
    """Empty when ``user`` can run ``program --version``, else what went wrong."""
    argv = ["runuser", "-u", user, "--", program, "--version"]
    probe = subprocess.run(argv, capture_output=True, text=True, check=False)
    return "" if probe.returncode == 0 else (probe.stderr.strip() or f"exit {probe.returncode}")


def system_python() -> str:
    want = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (f"/usr/bin/{want}", f"/usr/local/bin/{want}"):
        if Path(candidate).exists():
            return candidate
    raise RuntimeError(f"the job owner cannot run {sys.executable} and there is no /usr/bin/{want}")


def ensure_job_owner() -> str:
    """The job owner (uid ``JOB_UID``, made as ``wlmvk`` if missing), with the red-boxes' socket
    directory and each cluster's work directory its own: its name."""
    try:
        user = pwd.getpwuid(JOB_UID).pw_name
    except KeyError:
        subprocess.run(["useradd", "-m", "-u", str(JOB_UID), "-U", "wlmvk"], check=True)
        user = "wlmvk"
    SOCKET_DIR.mkdir(parents=True, exist_ok=True)
    os.chown(SOCKET_DIR, JOB_UID, JOB_UID)
    SOCKET_DIR.chmod(0o755)
    for cluster in CLUSTERS:
        work = localslurm.jobs_root() / cluster.name
        work.mkdir(parents=True, exist_ok=True)
        os.chown(work, JOB_UID, JOB_UID)
    return user
