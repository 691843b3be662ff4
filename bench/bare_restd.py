"""A bare slurmrestd, posted to directly: the limit of the path red-box's submissions take.

bench/redbox_submit.py runs this as the job owner (``rest_auth/local`` serves only clients of
slurmrestd's own uid, and slurmrestd refuses root), as red-box runs. It starts slurmrestd exactly
as red-box starts its own (``wlmvk.redbox.slurm.rest.daemon.Restd``: the same binary, version,
plugins, ``-t`` threads and a Unix socket in a private directory), prints ``ready VERSION``, then
for each line ``COUNT CONCURRENCY`` read on stdin posts COUNT job submissions to it and prints
their job ids as one JSON line. Nothing else of red-box is in the way: the posts go from
CONCURRENCY connections of a plain HTTP/1.1 client (below), each sending its next request once
the last is answered. The body is the one red-box would post for the same script and partition
without an idempotency key (``scripts.sbatch_options`` then ``rest.fields.request_body``): the
same job, so the two arms differ only by red-box.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile

from wlmvk.core import logging as wlog
from wlmvk.redbox import scripts
from wlmvk.redbox.slurm.rest import fields as restfields
from wlmvk.redbox.slurm.rest.daemon import Restd


class Refused(Exception):
    """slurmrestd answered a submission without a job id."""


async def post(socket: str, request: bytes, count: int, concurrency: int) -> list[int]:
    """``count`` copies of ``request`` through ``concurrency`` kept connections; the job ids."""
    left = count
    ids: list[int] = []

    async def connection() -> None:
        nonlocal left
        reader, writer = await asyncio.open_unix_connection(socket)
        try:
            while left > 0:
                left -= 1
                writer.write(request)
                await writer.drain()
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length))
                job_id = body.get("job_id")
                if not isinstance(job_id, int) or job_id <= 0:
                    raise Refused(f"{head.split(b' ', 2)[1].decode()}: {body.get('errors')}")
                ids.append(job_id)
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return ids


def request_bytes(version: str, partition: str, script: str, work_dir: str) -> bytes:
    """The HTTP request red-box's own slurmrestd would get for ``script`` (no key)."""
    options = scripts.sbatch_options(
        script=script,
        partition=partition,
        name="",
        working_dir=work_dir,
        std_out="",
        std_err="",
        idempotency_key="",
    )
    body = restfields.request_body(script, options, dict(os.environ), version=version)
    head = (
        f"POST /slurm/{version}/job/submit HTTP/1.1\r\nHost: slurmrestd\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def serve(partition: str, script: str) -> int:
    restd = await Restd.find()
    if restd is None:
        print("no slurmrestd that speaks a version red-box does (or running as root)", file=sys.stderr)
        return 2
    supervisor = asyncio.ensure_future(restd.run())
    try:
        if not await restd.ready(10):
            print("slurmrestd did not serve within 10 s", file=sys.stderr)
            return 1
        request = request_bytes(restd.version, partition, script, tempfile.mkdtemp(prefix="bare-restd-"))
        print(f"ready {restd.version}", flush=True)
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            count, concurrency = (int(word) for word in line.split())
            print(json.dumps(await post(restd.socket, request, count, concurrency)), flush=True)
        return 0
    finally:
        supervisor.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await supervisor


def main() -> int:
    partition, script = sys.argv[1], sys.argv[2]
    wlog.configure("warning")  # on stderr: stdout carries the answers
    return asyncio.run(serve(partition, script))


if __name__ == "__main__":
    sys.exit(main())
