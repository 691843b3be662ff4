"""A Slurm of the fault suite's own, whose slurmctld may be restarted: the shared one's never is.

``dev/scripts/slurm-local`` in another base directory, on other ports and under
another cluster name (its own munged, MariaDB, slurmdbd, slurmctld and slurmd;
the job owner account is the machine's, shared). ``running`` starts it, points
this process at it (``SLURM_CONF``, ``WLMVK_SLURM_BASE``: every Slurm command
and red-box started meanwhile use it), and on leaving points the process back
and stops it. The fast test and the long bench take different bases and ports
(``TEST``, ``BENCH``), so both may run at once. Two faults: ``restart_slurmctld``,
SIGTERM to its slurmctld by its own pid file, down a while, started again with
its own config, waited for with ``scontrol ping``; and ``stop_slurmctld``,
SIGSTOP to it for a while (past its MessageTimeout: its clients give up on it
while it holds their requests), then SIGCONT.

Under a release (``WLMVK_SLURM_RELEASE``, the release subset) the Slurm of the
test's own is the release's box (``box``): started by the run, with a slurmctld
of its own that may be stopped, not restarted (its init started it). Its pid
file holds the pid in the box's pid namespace; the signal goes to the host's
pid of that process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.fixtures import slurm_release
from wlmvk_dev import localslurm


@dataclass(frozen=True)
class Instance:
    base: Path
    ctld_port: int
    cluster: str
    enforce: str = ""
    """AccountingStorageEnforce (``WLMVK_SLURM_ENFORCE``): none unless given."""
    gpus: str = ""
    """The node's GPUs (``WLMVK_SLURM_GPUS``): slurm-local's default unless given."""
    release: str | None = None
    """The release whose box this is (``box``), None for an instance of ``dev/scripts/slurm-local``."""

    def variables(self) -> dict[str, str]:
        """What ``dev/scripts/slurm-local`` reads to run this instance and no other."""
        return localslurm.instance(
            self.base, self.ctld_port, self.cluster, enforce=self.enforce, gpus=self.gpus
        )

    @property
    def conf(self) -> Path:
        return self.base / "etc" / "slurm.conf"

    @property
    def jobs_root(self) -> Path:
        if self.release is not None:
            return slurm_release.jobs_root(self.release)
        return self.base / "jobs"

    def script(self, *args: str) -> None:
        env = {**os.environ, **self.variables()}
        done = subprocess.run(
            [str(localslurm.SCRIPT), *args], env=env, capture_output=True, text=True, check=False, timeout=600
        )
        if done.returncode != 0:
            raise RuntimeError(f"slurm-local {' '.join(args)} ({self.base}): {done.stderr[-2000:]}")


def worker_slot() -> tuple[str, int]:
    """This pytest worker's name and number (``gw0`` and 0 outside xdist): an instance a test module
    starts is one per worker (base suffixed with the name, ports 3 apart per number), since two
    workers may run modules that start it at once."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return worker, int(worker[2:]) if worker[2:].isdigit() else 0


# The fast test's base and port may be moved (WLMVK_FAULTS_SLURM_BASE, _PORT): several
# checkouts on one machine then each run their own.
TEST = Instance(
    Path(os.environ.get("WLMVK_FAULTS_SLURM_BASE", "/var/tmp/wlmvk-faults-slurm-test")),
    int(os.environ.get("WLMVK_FAULTS_SLURM_PORT", "6937")),
    "faultstest",
)
# The long bench's, movable the same way (WLMVK_FAULTS_BENCH_SLURM_BASE, _PORT).
BENCH = Instance(
    Path(os.environ.get("WLMVK_FAULTS_BENCH_SLURM_BASE", "/var/tmp/wlmvk-faults-slurm")),
    int(os.environ.get("WLMVK_FAULTS_BENCH_SLURM_PORT", "6927")),
    "faultsbench",
)


def box(release: str) -> Instance:
    """The release's box (``dev/scripts/slurm-release``, its state under ``WLMVK_SLURM_RELEASES_BASE``)."""
    cluster = os.environ.get("WLMVK_SLURM_CLUSTER") or "testcluster"
    return Instance(slurm_release.BASE / release / "state-dir", 0, cluster, release=release)


@contextlib.contextmanager
def running(instance: Instance) -> Iterator[Instance]:
    """``instance`` up, this process pointed at it; back to the shared Slurm, and it down, after."""
    saved = {name: os.environ.get(name) for name in ("SLURM_CONF", "WLMVK_SLURM_BASE")}
    instance.script("up")
    try:
        os.environ.update(SLURM_CONF=str(instance.conf), WLMVK_SLURM_BASE=str(instance.base))
        localslurm.environment.cache_clear()
        empty()
        yield instance
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        localslurm.environment.cache_clear()
        instance.script("down")


def empty(env: Mapping[str, str] | None = None, *, partition: str | None = None) -> None:
    """No job of an earlier run left in the Slurm that ``env`` (else this process) points at (in
    ``partition`` only, when given): an instance's state directory outlives a run, and its
    slurmctld recovers what a killed or failed test left (jobs still running on its CPUs or GPUs
    kept a later test's jobs pending until their time limit)."""
    where = ["-p", partition] if partition else []

    def queued() -> list[str]:
        done = subprocess.run(
            ["squeue", "-h", *where, "-o", "%i"], env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.split()

    left = queued()
    if not left:
        return
    subprocess.run(["scancel", *left], env=env, capture_output=True, check=False)
    deadline = time.monotonic() + 60
    while queued():
        if time.monotonic() > deadline:
            conf = (env if env is not None else os.environ).get("SLURM_CONF")
            raise RuntimeError(f"jobs of an earlier run still in {conf} after 60 s")
        time.sleep(0.5)


def _up() -> bool:
    done = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, check=False)
    return "UP" in done.stdout


def slurmctld_pid(instance: Instance) -> int:
    """The pid in ``instance``'s own pid file, while that process is a slurmctld (a box's: its pid
    on the host, the slurmctld in the box's pid namespace whose pid there is the file's)."""
    pid = int((instance.base / "run" / "slurmctld.pid").read_text().split()[0])
    if instance.release is not None:
        return _boxed(instance.release, "slurmctld", pid)
    if Path(f"/proc/{pid}/comm").read_text().strip() != "slurmctld":
        raise RuntimeError(f"pid {pid} of {instance.base}'s pid file is not a slurmctld")
    return pid


def _boxed(release: str, command: str, inner: int) -> int:
    """The host's pid of ``command`` in ``release``'s box whose pid in the box is ``inner``."""
    init = int((slurm_release.BASE / release / "box.pid").read_text().split()[0])
    namespace = os.readlink(f"/proc/{init}/ns/pid")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{entry}/ns/pid") != namespace:
                continue
            status = Path(f"/proc/{entry}/status").read_text()
            ids = next(line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:"))
            if Path(f"/proc/{entry}/comm").read_text().strip() == command and int(ids[-1]) == inner:
                return int(entry)
    raise RuntimeError(f"no {command} with pid {inner} in the {release} box (init {init})")


def _pointed_at(instance: Instance) -> bool:
    """Whether this process's Slurm commands reach ``instance`` (a box: the release under test)."""
    if instance.release is not None:
        return instance.release == slurm_release.RELEASE
    return os.environ.get("SLURM_CONF") == str(instance.conf)


async def restart_slurmctld(instance: Instance, *, down_for: float) -> str:
    """SIGTERM ``instance``'s slurmctld, wait for it to exit, leave it down ``down_for`` seconds,
    start it again and wait until ``scontrol ping`` says UP; what went wrong, or ''."""
    if instance.release is not None:
        raise RuntimeError(f"the {instance.release} box's slurmctld is its init's: stopped, never restarted")
    if not _pointed_at(instance):
        raise RuntimeError(f"this process is not pointed at {instance.base}: its slurmctld is not restarted")
    pid = await asyncio.to_thread(slurmctld_pid, instance)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while await asyncio.to_thread(os.path.exists, f"/proc/{pid}"):
        if time.monotonic() > deadline:
            return f"slurmctld {pid} did not exit within 60 s of SIGTERM"
        await asyncio.sleep(0.2)
    await asyncio.sleep(down_for)
    await asyncio.to_thread(subprocess.run, ["slurmctld", "-f", str(instance.conf)], check=False)
    deadline = time.monotonic() + 90
    while not await asyncio.to_thread(_up):
        if time.monotonic() > deadline:
            await asyncio.to_thread(instance.script, "up")
            return "slurmctld did not answer scontrol ping within 90 s of its start; slurm-local up run"
        await asyncio.sleep(0.5)
    return ""


async def stop_slurmctld(instance: Instance, *, seconds: float) -> str:
    """SIGSTOP ``instance``'s slurmctld for ``seconds`` (SIGCONT whatever happens meanwhile), then
    wait until ``scontrol ping`` says UP; what went wrong, or ''."""
    if not _pointed_at(instance):
        raise RuntimeError(f"this process is not pointed at {instance.base}: its slurmctld is not stopped")
    pid = await asyncio.to_thread(slurmctld_pid, instance)
    os.kill(pid, signal.SIGSTOP)
    try:
        await asyncio.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 90
    while not await asyncio.to_thread(_up):
        if time.monotonic() > deadline:
            return f"slurmctld {pid} did not answer scontrol ping within 90 s of SIGCONT"
        await asyncio.sleep(0.5)
    return ""
