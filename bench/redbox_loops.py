"""uvloop or asyncio's loop: red-box and its client each way, side by side in one run; prints CPU per job.

Two red-boxes through their own slurmrestd (``--slurm-api rest``, as the job
owner, as deployed), one started with ``WLMVK_EVENT_LOOP=uvloop``, one with
``asyncio`` (``wlmvk.core.loop``). Four arms, interleaved over ``--rounds``
rounds: each red-box driven by a client on each loop. A client is a
subprocess of this script (the kubelet's ``RedBoxClient``, ``--concurrency``
keyed submissions in flight, ``count`` held jobs) that reads its own CPU
around its submissions; red-box's CPU is read from /proc. Figures are the
medians of the rounds; every job is cancelled at the end of its arm.

    .venv/bin/python bench/redbox_loops.py 1000 --rounds 3 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import cpu_meter
from redbox_common import red_box_process, scancel
from redbox_submit import through

from wlmvk.core import logging as wlog
from wlmvk.core import loop as event_loop
from wlmvk.redboxclient.client import RedBoxClient

LOOPS = ("uvloop", "asyncio")


@contextlib.contextmanager
def _loop_env(name: str) -> Iterator[None]:
    saved = os.environ.get(event_loop.ENV)
    os.environ[event_loop.ENV] = name
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(event_loop.ENV)
        else:
            os.environ[event_loop.ENV] = saved


async def _client(socket: str, count: int, concurrency: int) -> dict[str, object]:
    """The client's side of one arm (in its own process): its job ids and CPU seconds."""
    async with RedBoxClient(socket, timeout=120) as client:
        await client.partitions()  # connected before the clock starts
        cpu = time.process_time()
        started = time.perf_counter()
        ids = await through(client, count, concurrency=concurrency, keyed=True)
        return {
            "ids": ids,
            "seconds": time.perf_counter() - started,
            "cpu": time.process_time() - cpu,
        }


def client_arm(socket: str, count: int, concurrency: int, loop: str) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--client", socket, str(count), "--concurrency", str(concurrency)]
    env = {**os.environ, event_loop.ENV: loop}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def measure(count: int, rounds: int, concurrency: int) -> dict[str, dict[str, list[float]]]:
    figures: dict[str, dict[str, list[float]]] = {}
    pids: dict[str, list[int]] = {name: [] for name in LOOPS}
    async with contextlib.AsyncExitStack() as stack:
        sockets = {}
        for name in LOOPS:
            with _loop_env(name):  # read by red-box at its start
                rest = red_box_process(pids=pids[name], args=("--slurm-api", "rest"), owner=True)
                client = await stack.enter_async_context(rest)
            scancel(await through(client, 20, concurrency=4, keyed=True))  # its key index built
            sockets[name] = client.socket_path
        await cpu_meter.settled()
        for number in range(rounds):
            for server in LOOPS:
                for side in LOOPS:
                    arm = f"red-box {server:<7} client {side:<7}"
                    before = cpu_meter.process_times(pids[server][0])[0]
                    got = await asyncio.to_thread(client_arm, sockets[server], count, concurrency, side)
                    after = cpu_meter.process_times(pids[server][0])[0]
                    ids: list[int] = got["ids"]
                    if len(set(ids)) != count:
                        raise SystemExit(f"{arm}: {len(set(ids))} distinct jobs of {count}")
                    scancel(ids)
                    seconds, cpu = float(got["seconds"]), float(got["cpu"])
                    row = figures.setdefault(arm, {"jobs_per_s": [], "red-box_ms": [], "client_ms": []})
                    row["jobs_per_s"].append(count / seconds)
                    row["red-box_ms"].append((after - before) * 1000 / count)
                    row["client_ms"].append(cpu * 1000 / count)
                    print(
                        f"round {number + 1} {arm} {count / seconds:7.1f} jobs/s, CPU per job (ms): "
                        f"red-box {row['red-box_ms'][-1]:.2f}, client {row['client_ms'][-1]:.2f}",
                        flush=True,
                    )
                    await cpu_meter.settled()
    return figures


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("count", type=int, nargs="?", default=1000, help="jobs per arm and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=16, help="calls in flight")
    p.add_argument("--client", default="", help=argparse.SUPPRESS)  # one arm's client (internal)
    args = p.parse_args()
    wlog.configure("warning")
    if args.client:
        print(json.dumps(event_loop.run(_client(args.client, args.count, args.concurrency))))
        return 0
    figures = asyncio.run(measure(args.count, args.rounds, args.concurrency))
    print(f"\njobs per arm and round: {args.count}; rounds: {args.rounds}; in flight: {args.concurrency}")
    print("medians of the rounds:")
    for arm, row in figures.items():
        medians = {k: statistics.median(v) for k, v in row.items()}
        print(
            f"{arm}  {medians['jobs_per_s']:7.1f} jobs/s  red-box {medians['red-box_ms']:.2f} ms/job"
            f"  client {medians['client_ms']:.2f} ms/job"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
