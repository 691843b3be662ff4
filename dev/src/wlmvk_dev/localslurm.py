"""The local Slurm of ``dev/scripts/slurm-local``, as tests, benchmarks and the demo reach it.

That Slurm keeps its configuration, munged and state in a base directory of
its own (never /etc/slurm), so a Slurm command finds it only through
``SLURM_CONF``, and a site's Slurm on the same machine is found by nobody here.
The script is the one place that knows the layout: ``environment()`` takes its
``env`` answer, ``use()`` puts it in this process's environment, where every
Slurm command, red-box and job started from here inherits it (whatever
``SLURM_CONF`` the caller's shell had, e.g. a site's, is replaced).
"""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "dev" / "scripts" / "slurm-local"


@functools.cache
def environment() -> dict[str, str]:
    """The variables ``dev/scripts/slurm-local env`` exports (SLURM_CONF, WLMVK_SLURM_BASE)."""
    out = subprocess.run([str(SCRIPT), "env"], capture_output=True, text=True, check=True).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, _, value = words[1].partition("=")
            found[name] = value
    if "SLURM_CONF" not in found or "WLMVK_SLURM_BASE" not in found:
        raise RuntimeError(f"{SCRIPT} env printed no SLURM_CONF/WLMVK_SLURM_BASE: {out!r}")
    return found


def use() -> dict[str, str]:
    """Point this process, and every child it starts from now on, at the local Slurm."""
    variables = environment()
    os.environ.update(variables)
    return variables


def base() -> Path:
    """The local Slurm's base directory (config, state, logs, pid files)."""
    return Path(environment()["WLMVK_SLURM_BASE"])


def jobs_root() -> Path:
    """The shared working directory jobs run in (mode 1777, created by ``up``)."""
    return base() / "jobs"


def instance(
    base: Path, ctld_port: int, cluster: str, *, enforce: str = "", gpus: str = ""
) -> dict[str, str]:
    """What ``dev/scripts/slurm-local`` reads to run an instance of its own beside the shared one:
    its base, cluster name and ports (the ctld's and the three after it, MariaDB's moved by as
    much from its default), ``AccountingStorageEnforce`` (none unless ``enforce``) and, when
    ``gpus`` is given, its node's GPUs (``[type:]count,...``)."""
    return {
        **({"WLMVK_SLURM_GPUS": gpus} if gpus else {}),
        "WLMVK_SLURM_BASE": str(base),
        "WLMVK_SLURM_CLUSTER": cluster,
        "WLMVK_SLURM_CTLD_PORT": str(ctld_port),
        "WLMVK_SLURM_SLURMD_PORT": str(ctld_port + 1),
        "WLMVK_SLURM_DBD_PORT": str(ctld_port + 2),
        "WLMVK_SLURM_DB_PORT": str(ctld_port - 6917 + 3317),
        "WLMVK_SLURM_ENFORCE": enforce,
    }


_PID_FILES = {
    "munged": "munge/munged.pid",
    "mariadbd": "db/mysqld.pid",
    "slurmdbd": "run/slurmdbd.pid",
    "slurmctld": "run/slurmctld.pid",
    "slurmd": "run/slurmd.pid",
}


def pid_file(daemon: str) -> Path:
    """Where ``dev/scripts/slurm-local`` keeps ``daemon``'s pid (munged, mariadbd, slurmdbd,
    slurmctld, slurmd): of this Slurm's own daemon, not of any other on the machine."""
    return base() / _PID_FILES[daemon]


def pid(daemon: str) -> int | None:
    """The pid of this Slurm's ``daemon`` while it runs, else None."""
    try:
        found = int(pid_file(daemon).read_text().strip())
        comm = Path(f"/proc/{found}/comm").read_text().strip()
    except (OSError, ValueError):
        return None
    return found if comm == daemon else None
