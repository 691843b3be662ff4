"""Submit 200 jobs through red-box vs a plain sequential ``sbatch`` loop; prints the ratio.

Both sides submit the same held one-line script (``#SBATCH --hold``), so
nothing runs; every job is cancelled afterwards. red-box runs in its own process
(as deployed) and is driven the way the kubelet drives it: concurrent
SubmitJob calls through the real client over its Unix socket. The ratio
is loop time / red-box time (>= 1.0 means red-box is at least as fast).
One run, one figure; re-run to see the spread.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid

from redbox_common import red_box_process, scancel

from wlmvk.core import logging as wlog
from wlmvk.core.jobs import JobId, JobSpec

COUNT = 200
CONCURRENCY = 8
SCRIPT = "#!/bin/sh\n#SBATCH --hold\n#SBATCH --output=/dev/null\ntrue\n"


def sbatch_loop(count: int) -> tuple[float, list[int]]:
    ids = []
    started = time.perf_counter()
    for _ in range(count):
        done = subprocess.run(
            ["sbatch", "--parsable"], input=SCRIPT, capture_output=True, text=True, check=True
        )
        ids.append(int(done.stdout.split(";")[0]))
    return time.perf_counter() - started, ids


async def through_red_box(count: int, *, keyed: bool) -> tuple[float, list[JobId]]:
    async with red_box_process() as client:
        limit = asyncio.Semaphore(CONCURRENCY)

        async def one() -> JobId:
            key = uuid.uuid4().hex if keyed else ""
            async with limit:
                return await client.submit(JobSpec(script=SCRIPT, idempotency_key=key))

        started = time.perf_counter()
        ids = await asyncio.gather(*(one() for _ in range(count)))
        return time.perf_counter() - started, list(ids)


def main() -> int:
    wlog.configure("warning")
    count = int(sys.argv[1]) if len(sys.argv) > 1 else COUNT
    created: list[int] = []
    try:
        loop_time, ids = sbatch_loop(count)
        created += ids
        box_time, box_ids = asyncio.run(through_red_box(count, keyed=False))
        created += box_ids
        keyed_time, keyed_ids = asyncio.run(through_red_box(count, keyed=True))
        created += keyed_ids
    finally:
        scancel(created)
    print(f"jobs: {count}; red-box concurrency: {CONCURRENCY}")
    print(f"plain sbatch loop:          {loop_time:7.3f} s  ({count / loop_time:6.1f} jobs/s)")
    print(f"red-box, no keys:           {box_time:7.3f} s  ({count / box_time:6.1f} jobs/s)")
    print(f"red-box, idempotency keys:  {keyed_time:7.3f} s  ({count / keyed_time:6.1f} jobs/s)")
    print(
        f"ratio (loop / red-box):     {loop_time / box_time:5.2f}x without keys, "
        f"{loop_time / keyed_time:5.2f}x with keys"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
