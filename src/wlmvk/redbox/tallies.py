"""What red-box did, counted for whoever measures it: key index scans, garbage collections, CPU.

A debugging aid, not an interface: ``--stats-file PATH`` makes red-box write these tallies as
one JSON object to PATH each time it gets SIGUSR1 (written whole, then renamed into place, with
``written`` counting the writes, so a reader waits for the number to move). A benchmark reads
them before and after each round to tell what red-box did in it besides submitting
(bench/redbox_submit.py). The garbage collector is watched through ``gc.callbacks`` only when
the flag is given: collections by generation and the seconds they took.
"""

from __future__ import annotations

import gc
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

GENERATIONS = 3


class GcWatch:
    """Collections by generation and the seconds they took, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.collections = [0] * GENERATIONS
        self.seconds = [0.0] * GENERATIONS
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        generation = int(info["generation"])
        self.collections[generation] += 1
        self.seconds[generation] += time.perf_counter() - self._started

    def start(self) -> None:
        gc.callbacks.append(self)

    def stop(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)


def snapshot(scans: Counter[str], fsyncs: list[float], watch: GcWatch | None) -> dict[str, Any]:
    """The tallies now: ``scans`` (the key index's, by kind), the journal's group commits
    (``fsyncs``: how many, their seconds), GC, CPU seconds of the process."""
    cpu = os.times()
    return {
        "index_scans": dict(scans),
        "fsyncs": int(fsyncs[0]),
        "fsync_seconds": round(fsyncs[1], 6),
        "gc_collections": list(watch.collections) if watch else [],
        "gc_seconds": [round(s, 6) for s in watch.seconds] if watch else [],
        "gc_objects": len(gc.get_objects()) if watch else 0,
        "cpu_seconds": round(cpu.user + cpu.system, 3),
        "children_cpu_seconds": round(cpu.children_user + cpu.children_system, 3),
    }


class StatsFile:
    """Writes the tallies to ``path`` on request (SIGUSR1), whole or not at all."""

    def __init__(self, path: Path, scans: Counter[str], fsyncs: list[float], watch: GcWatch) -> None:
        self.path = path
        self.scans = scans
        self.fsyncs = fsyncs
        self.watch = watch
        self.written = 0

    def write(self) -> None:
        self.written += 1
        figures = {"written": self.written, **snapshot(self.scans, self.fsyncs, self.watch)}
        partial = self.path.with_name(self.path.name + ".part")
        partial.write_text(json.dumps(figures))
        partial.rename(self.path)
