"""Where a benchmark's CPU goes: seconds of CPU by part of the system, read from /proc.

A submission costs CPU in several processes at once: the server (red-box or
the original), the ``sbatch`` it spawns (counted in the server's reaped
children), Slurm's daemons (slurmctld, slurmdbd with its MariaDB, munged),
and the client driving the benchmark. On a machine of two cores that all
share, jobs/s is bounded by their sum; this shows which part to make cheaper.
Readings are cumulative seconds; ``per_job`` turns two of them into
milliseconds per job.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import resource
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from wlmvk_dev import localslurm

DAEMONS = {"slurmctld": ("slurmctld",), "munged": ("munged",), "slurmdbd+db": ("slurmdbd", "mariadbd")}
PARTS = ("server", "slurmrestd", "sbatch", *DAEMONS, "client", "total")
"""The parts a reading's ``per_job`` names, in the order the tables show them."""
TICK = os.sysconf("SC_CLK_TCK")


def process_times(pid: int) -> tuple[float, float]:
    """(own, reaped children's) CPU seconds of ``pid``; zeros once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    return (int(fields[11]) + int(fields[12])) / TICK, (int(fields[13]) + int(fields[14])) / TICK


@functools.cache  # the daemons stay up for the run
def _pids(name: str) -> tuple[int, ...]:
    """The local Slurm's own ``name`` (by its pid file), not another Slurm's on the machine."""
    found = localslurm.pid(name)
    return () if found is None else (found,)


def reading(server: int | None, clients: Sequence[int] = ()) -> dict[str, float]:
    """CPU seconds so far: the server and its ``sbatch`` children (or this process's
    children when there is no server: the ``sbatch`` loops), the daemons, and the client:
    this process and ``clients`` (the processes that drive an arm for it)."""
    here = resource.getrusage(resource.RUSAGE_SELF)
    out = {"client": here.ru_utime + here.ru_stime + sum(process_times(pid)[0] for pid in clients)}
    if server is None:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        out["server"], out["sbatch"] = 0.0, children.ru_utime + children.ru_stime
    else:
        out["server"], out["sbatch"] = process_times(server)
    out["slurmrestd"] = sum(process_times(pid)[0] for pid in _children(server, "slurmrestd"))
    return out | _daemon_parts()


def _children(pid: int | None, name: str) -> list[int]:
    """The live children of ``pid`` named ``name`` (red-box's own slurmrestd)."""
    if pid is None:
        return []
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in task.read_text().split():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{child}/comm").read_text().strip() == name:
                    found.append(int(child))
    return found


async def settled(limit: float = 15.0) -> None:
    """Until Slurm's daemons are idle (a half second in which they used under 10 ms of CPU):
    the accounting of one arm's cancelled jobs must not be counted in the next arm's readings."""
    deadline = time.monotonic() + limit
    last = _daemons()
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        now = _daemons()
        if now - last < 0.01:
            return
        last = now


def _daemon_parts() -> dict[str, float]:
    """CPU seconds so far of each daemon part (DAEMONS)."""
    return {
        part: sum(process_times(pid)[0] for name in names for pid in _pids(name))
        for part, names in DAEMONS.items()
    }


def _daemons() -> float:
    return sum(_daemon_parts().values())


def per_job(before: Mapping[str, float], after: Mapping[str, float], jobs: int) -> dict[str, float]:
    """Milliseconds of CPU per job by part, and their total."""
    parts = {part: (after[part] - before[part]) * 1000 / jobs for part in after}
    return parts | {"total": sum(parts.values())}


def median(values: Sequence[float]) -> float:
    """The middle value (the upper one of an even count): a round's figure, never an average."""
    return sorted(values)[len(values) // 2]


def table(rows: Mapping[str, Sequence[Mapping[str, float]]]) -> list[str]:
    """One line per arm: the median over rounds of each part's ms per job."""
    lines = [f"{'arm':<18} " + " ".join(f"{p:>11}" for p in PARTS)]
    for arm, rounds in rows.items():
        medians = [median([r[p] for r in rounds]) for p in PARTS]
        lines.append(f"{arm:<18} " + " ".join(f"{m:11.2f}" for m in medians))
    return lines
