#!/usr/bin/env python3
"""Job states to and from their bytes: ``wire.states`` against the message classes, in one run.

Each round writes 1000 distinct ``JobState`` values (the shapes a status tick carries: held,
running, finished, with paths, keys and times) and reads them back, once through betterproto's
message classes (``codec.state_to_wire``/``state_from_wire``) and once straight between bytes
and values (``wire.states.write_state``/``read_state``), interleaved; prints each round's
microseconds per state and the median ratios (what red-box saves per changed state written,
what a kubelet saves per changed state read). Pure CPU, no Slurm.

    .venv/bin/python bench/wire_states.py [--states 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from wlmvk._proto import api
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.wire import codec
from wlmvk.wire.states import read_state, write_state


def states(count: int) -> list[JobState]:
    start = datetime(2026, 12, 5, 19, 0, tzinfo=UTC)
    kinds = [JobStatus.PENDING, JobStatus.RUNNING, JobStatus.COMPLETED, JobStatus.FAILED]
    out = []
    for n in range(count):
        status = kinds[n % len(kinds)]
        out.append(
            JobState(
                job_id=JobId(24_110_000 + n),
                status=status,
                reason="JobHeldUser" if status is JobStatus.PENDING else "None",
                exit_code=n % 3 if status.terminal else None,
                submit_time=start + timedelta(seconds=n),
                start_time=None if status is JobStatus.PENDING else start + timedelta(seconds=n + 1),
                end_time=start + timedelta(seconds=n + 9) if status.terminal else None,
                std_out=f"/home/user/jobs/slurm-{24_110_000 + n}.out",
                working_dir="/home/user/jobs",
                partition="debug",
                node_list="" if status is JobStatus.PENDING else "node01",
                name=f"pod-{n}",
                idempotency_key=f"5c1b4a2e-0d7e-4b9a-9b1e-{n:012d}",
            )
        )
    return out


def by_classes(state: JobState) -> bytes:
    return bytes(codec.state_to_wire(state))


def from_classes(piece: bytes) -> JobState:
    return codec.state_from_wire(api.JobState().parse(piece))


def timed(
    write: Callable[[JobState], bytes], read: Callable[[bytes], JobState], values: list[JobState]
) -> tuple[float, float]:
    started = time.perf_counter()
    pieces = [write(v) for v in values]
    wrote = time.perf_counter() - started
    started = time.perf_counter()
    back = [read(p) for p in pieces]
    read_s = time.perf_counter() - started
    assert back == [read_state(write_state(v)) for v in values]
    return wrote / len(values) * 1e6, read_s / len(values) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    values = states(args.states)
    write_ratios: list[float] = []
    read_ratios: list[float] = []
    for round_ in range(1, args.rounds + 1):
        cw, cr = timed(by_classes, from_classes, values)
        dw, dr = timed(write_state, read_state, values)
        write_ratios.append(cw / dw)
        read_ratios.append(cr / dr)
        print(
            f"round {round_}: message classes write {cw:6.1f} us, read {cr:6.1f} us;"
            f" wire.states write {dw:6.1f} us, read {dr:6.1f} us (per state)",
            flush=True,
        )
    print(f"states: {args.states}, rounds: {args.rounds}")
    print(f"write, x faster than the message classes, median: {statistics.median(write_ratios):.1f}x")
    print(f"read, x faster than the message classes, median: {statistics.median(read_ratios):.1f}x")


if __name__ == "__main__":
    main()
