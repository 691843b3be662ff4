"""A benchmark arm driven through another process's stdin: ``COUNT CONCURRENCY`` in, job ids out.

bench/bare_restd.py (a bare slurmrestd and its plain HTTP client) and ``wlmclient submit`` (the Go
contract client, bench/go_submitter.py) both read one ``COUNT CONCURRENCY`` line per round and
answer it with the job ids as one JSON line; this is their side in bench/redbox_submit.py.
"""

from __future__ import annotations

import asyncio
import json

LINE_LIMIT = 32 * 2**20
"""The longest answer line a helper's stdout is read with (``limit=`` of its process): a round's
ids, 8-9 bytes each, for up to millions of jobs (asyncio's default of 64 KiB held 7,000)."""


class LineArm:
    """A running helper process: ``submit(count, concurrency)`` answers the job ids."""

    def __init__(self, proc: asyncio.subprocess.Process, name: str) -> None:
        self.proc = proc
        self.name = name

    async def submit(self, count: int, concurrency: int) -> list[int]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(f"{count} {concurrency}\n".encode())
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        answer = json.loads(line) if line else None
        if not isinstance(answer, list):
            raise RuntimeError(f"{self.name}: {line[:300]!r} (exit {self.proc.returncode})")
        return [int(job_id) for job_id in answer]


async def ended(proc: asyncio.subprocess.Process) -> None:
    """Close the helper's stdin (its end of the rounds) and wait for it; kill it after 15 s."""
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), 15)
    except TimeoutError:
        proc.kill()
        await proc.wait()
