"""Faults on Slurm's side of red-box and in red-box's clock, as churn faults (churn.py's ``Fault``)
and as the pieces the fast tests use: one place for each fault's mechanics.

- slurmctld stopped (SIGSTOP) past its MessageTimeout while pods are submitted
  (``slurmctld_stopped``; the signal itself is ``ownslurm.stop_slurmctld``, on a Slurm of the
  run's own: the shared one's slurmctld is never stopped);
- red-box's own slurmrestd stopped (SIGSTOP: hung, not dead) while pods are submitted
  (``slurmrestd_stopped``; ``slurmrestd_pid`` finds it under red-box);
- red-box's clock skewed (``skewed_clock``: the environment that runs red-box's process, and
  only it, under Debian's libfaketime; sbatch, squeue and slurmrestd keep the host's clock). The
  skew holds for a whole row, so its round's fault is ``churn.no_fault``;
- a standby takeover while the active kubelet's red-box calls are held on their way
  (``takeover_held``: a gate in front of red-box's socket per kubelet, tests/fixtures/gate.py),
  with pods deleted and created again under the same names meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import time
from pathlib import Path

from tests.faults import churn, ownslurm
from tests.faults.churn import Fault, KubeletRunner, Recreations, Tally
from tests.fixtures.gate import Gate
from tests.fixtures.processes import descendants
from tests.fixtures.redbox import JOB_OWNER, RedBox, _python_for
from wlmvk.kube.client import KubeClient

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
FAKETIME_PACKAGE = "faketime"

SLURMCTLD_STOPPED = 15.0
"""Seconds slurmctld stays stopped: past MessageTimeout (10 s, Slurm's default, which
dev/scripts/lib/slurm-conf.sh keeps), so its clients give up on it while it holds their requests."""

RESTD_REPLACED = 60.0
"""Seconds red-box has to replace a stopped slurmrestd before the round counts a problem."""


def skewed_clock(skew: int) -> dict[str, str]:
    """The environment that runs red-box (as the job owner) with its clock ``skew`` seconds off."""
    return {
        "LD_PRELOAD": str(LIBFAKETIME),
        "FAKETIME": f"{skew:+d}s",
        "FAKETIME_ONLY_CMDS": Path(_python_for(JOB_OWNER)).name,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }


def slurmrestd_pid(box: RedBox) -> int | None:
    """The slurmrestd red-box runs (a process under it), or None while there is none."""
    if box.proc is None:
        return None
    for pid in descendants(box.proc.pid):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "slurmrestd":
                return pid
    return None


def _gone(pid: int) -> bool:
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


def slurmctld_stopped(instance: ownslurm.Instance, rng: random.Random, tally: Tally) -> Fault:
    """Once pods are being submitted, ``instance``'s slurmctld stopped ``SLURMCTLD_STOPPED``
    seconds, then waited for (``scontrol ping`` UP within 90 s, else a round problem)."""

    async def strike() -> None:
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        problem = await ownslurm.stop_slurmctld(instance, seconds=SLURMCTLD_STOPPED)
        if problem:
            tally.round_problem(problem)

    return strike


def slurmrestd_stopped(box: RedBox, rng: random.Random, tally: Tally) -> Fault:
    """Once pods are being submitted, red-box's slurmrestd stopped with SIGSTOP; red-box must
    replace it (the stopped one gone, another serving) within ``RESTD_REPLACED`` seconds, else a
    round problem (and the stopped one is killed, so the next round starts whole)."""

    async def strike() -> None:
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        pid = await asyncio.to_thread(slurmrestd_pid, box)
        if pid is None:
            tally.round_problem("no slurmrestd under red-box to stop")
            return
        os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + RESTD_REPLACED
        while time.monotonic() < deadline:
            now = await asyncio.to_thread(slurmrestd_pid, box)
            if _gone(pid) and now is not None and now != pid:
                return
            await asyncio.sleep(0.25)
        tally.round_problem(f"red-box did not replace its stopped slurmrestd {pid} in {RESTD_REPLACED:.0f} s")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)

    return strike


HELD_FOR = 1.0
"""Seconds the active kubelet goes on sending into its closed gate before it is stopped."""

RECREATED = 10
"""Pods of a round (of those that run) deleted and created again during a held takeover."""


def takeover_held(
    pair: tuple[KubeletRunner, KubeletRunner],
    gates: tuple[Gate, Gate],
    kube: KubeClient,
    rng: random.Random,
    tally: Tally,
    recreations: Recreations,
) -> Fault:
    """``churn.takeover`` with SIGSTOP, the active kubelet's red-box calls held on their way: its
    gate (``gates`` matches ``pair``) is closed ``HELD_FOR`` seconds before the stop, so the calls
    it sends meanwhile (SubmitJobs among them, the round's pods being submitted) wait in the gate.
    Once the standby serves, ``RECREATED`` of the round's running pods are deleted and created again
    under the same names (each once gone: the new holder cancelled its job), then the gate opens:
    the deposed holder's calls reach red-box, which must refuse them, and it is resumed."""
    closed: list[Gate] = []

    async def hold(active: KubeletRunner) -> None:
        gate = gates[pair.index(active)]
        gate.open.clear()
        closed.append(gate)
        await asyncio.sleep(HELD_FOR)

    async def meanwhile(standby: KubeletRunner) -> None:
        try:
            runs = sorted(n for n, script in recreations.scripts.items() if script != churn.HELD)
            chosen = rng.sample(runs, min(RECREATED, len(runs)))
            failed = await recreations.recreate(chosen)
            if failed:
                tally.round_problem(f"pods not gone within 60 s, not created again: {failed}")
        finally:
            for gate in closed:
                gate.open.set()
            closed.clear()

    return churn.takeover(pair, kube, rng, tally, freeze=True, hold=hold, meanwhile=meanwhile)


def faketime_missing() -> str:
    """'' when libfaketime is there, else what to install."""
    return "" if LIBFAKETIME.exists() else f"libfaketime (apt-get install -y {FAKETIME_PACKAGE})"


def slurmrestd_missing() -> str:
    """'' when slurmrestd runs here, else what to install."""
    found = shutil.which("slurmrestd", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/usr/local/sbin")
    return "" if found else "slurmrestd (apt-get install -y slurmrestd)"
