"""Reading a red-box's tallies (``wlmvk.redbox.tallies``, its ``--stats-file``) around a round.

``Tallies.read()`` sends red-box SIGUSR1 and waits for the file's ``written`` count to move;
``difference`` turns two readings into what red-box did between them: key index scans started,
garbage collections by generation and their milliseconds, its CPU seconds and its children's
(the Slurm commands it ran: a scan's ``squeue`` and ``sacct``). ``machine_cpu`` is the CPU
seconds every process of the machine used so far (/proc/stat): a round's share left after the
arm's own parts is other work on the shared machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import tempfile
from pathlib import Path
from typing import Any

from redbox_common import JOB_OWNER


class Tallies:
    """One red-box's stats file: ``args`` to start it with, then ``read()`` once it runs."""

    def __init__(self) -> None:
        home = Path(tempfile.mkdtemp(prefix="rbstats", dir="/tmp"))
        os.chown(home, JOB_OWNER, JOB_OWNER)  # a red-box as the job owner writes here too
        self.path = home / "tallies.json"
        self.pid = 0

    @property
    def args(self) -> tuple[str, ...]:
        return ("--stats-file", str(self.path))

    async def read(self) -> dict[str, Any]:
        before = self._written()
        os.kill(self.pid, signal.SIGUSR1)
        for _ in range(500):
            if self._written() > before:
                figures: dict[str, Any] = json.loads(self.path.read_text())
                return figures
            await asyncio.sleep(0.01)
        raise RuntimeError(f"red-box {self.pid} wrote no tallies to {self.path} in 5 s")

    def _written(self) -> int:
        try:
            return int(json.loads(self.path.read_text())["written"])
        except FileNotFoundError:
            return 0


def machine_cpu() -> float:
    """CPU seconds the whole machine has been busy (not idle, not waiting for I/O) since boot."""
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(t) for t in stat.readline().split()[1:8]]
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")


def others(busy: float, ours: float, elapsed: float) -> dict[str, float]:
    """The cores the machine kept busy in a round, and those outside the arm's measured parts."""
    return {"machine_cores": busy / elapsed, "others_cores": max(busy - ours, 0.0) / elapsed}


def others_line(cores: dict[str, float]) -> str:
    return f"machine {cores['machine_cores']:.2f} cores busy, {cores['others_cores']:.2f} of them others'"


def notes(diff: dict[str, Any]) -> dict[str, float]:
    """A round's tallies as numbers kept with its CPU figures (bench/submit_goals.py reads them)."""
    return {
        "index_scans": float(sum(diff["index_scans"].values())),
        "fsyncs": float(diff["fsyncs"]),
        "gc_ms": float(sum(diff["gc_ms"])),
        "gc2": float(diff["gc_collections"][2]),
    }


def difference(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What red-box did between two readings."""
    scans = {k: v - before["index_scans"].get(k, 0) for k, v in after["index_scans"].items()}
    return {
        "index_scans": {k: v for k, v in scans.items() if v},
        "fsyncs": after["fsyncs"] - before["fsyncs"],
        "fsync_ms": round(1000 * (after["fsync_seconds"] - before["fsync_seconds"]), 1),
        "gc_collections": [
            a - b for a, b in zip(after["gc_collections"], before["gc_collections"], strict=True)
        ],
        "gc_ms": [
            round(1000 * (a - b), 1) for a, b in zip(after["gc_seconds"], before["gc_seconds"], strict=True)
        ],
        "gc_objects": after["gc_objects"],
        "cpu_s": round(after["cpu_seconds"] - before["cpu_seconds"], 3),
        "children_cpu_s": round(after["children_cpu_seconds"] - before["children_cpu_seconds"], 3),
    }


def line(diff: dict[str, Any]) -> str:
    """One round's tallies as a line of the raw output."""
    scans = ",".join(f"{k}={v}" for k, v in sorted(diff["index_scans"].items())) or "0"
    gcs = "/".join(str(n) for n in diff["gc_collections"])
    ms = "/".join(f"{m:.1f}" for m in diff["gc_ms"])
    return (
        f"index scans {scans}; fsyncs {diff['fsyncs']} ({diff['fsync_ms']:.1f} ms); "
        f"gc gen0/1/2 {gcs} ({ms} ms), {diff['gc_objects']} objects; "
        f"red-box cpu {diff['cpu_s']:.3f} s, its commands {diff['children_cpu_s']:.3f} s"
    )
