"""Benchmark: the kubelet's memory while it serves one huge log, by query.

A real red-box (its own process) serves a job output of ``--mib`` MiB with no
newline at all; the kubelet's log path (``stream_logs`` over the real
``RedBoxClient``) answers the queries ``kubectl logs`` sends, and
``tracemalloc`` records this process's peak of Python allocations during each.
Prints, per query, the bytes returned, the peak and the ratio peak / output
size: bounded memory means a small ratio whatever the size (before issue 14.4
the whole output was held: a ratio above 1).

    .venv/bin/python bench/kubelet_logs_memory.py --mib 200
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

from redbox_common import JOBS_ROOT, red_box_process

from wlmvk.kubelet.api.logs import LogOptions, LogSource, stream_logs

QUERIES = {
    "tailLines=1": LogOptions(tail_lines=1),
    "limitBytes=10": LogOptions(limit_bytes=10),
    "tailLines=1&limitBytes=10": LogOptions(tail_lines=1, limit_bytes=10),
    "tailLines=100000 (two passes)": LogOptions(tail_lines=100_000),
    "whole output": LogOptions(),
    "timestamps=true": LogOptions(timestamps=True),
}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=200)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-logs-", dir=JOBS_ROOT))
    size = args.mib * 1024 * 1024
    with (work / "out.txt").open("wb") as out:
        block = b"x" * (1024 * 1024)
        for _ in range(args.mib):
            out.write(block)
    ended = asyncio.Event()
    ended.set()
    source = LogSource(str(work / "out.txt"), datetime.now(UTC), ended.wait)
    print(f"output: {args.mib} MiB without a newline, served by red-box over its Unix socket")
    print(f"{'query':32} {'returned':>12} {'peak':>12} {'peak/output':>12} {'seconds':>8}")
    async with red_box_process(work) as client:
        for name, options in QUERIES.items():
            returned = 0
            tracemalloc.start()
            started = time.monotonic()
            async for chunk in stream_logs(client, source, options):
                returned += len(chunk)
            elapsed = time.monotonic() - started
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"{name:32} {returned:>12} {peak:>12} {peak / size:>12.4f} {elapsed:>8.1f}")
    (work / "out.txt").unlink()


if __name__ == "__main__":
    asyncio.run(main())
