"""The Go contract client's submission load (``wlmclient submit``) as a benchmark arm's client.

``wlmclient submit`` (contract/go/cmd/wlmclient/load.go) keeps one gRPC connection to red-box and,
for each ``COUNT CONCURRENCY`` line it reads, sends COUNT keyed jobs, each in its own SubmitJob
call, CONCURRENCY calls in flight, and prints their job ids as one JSON line: a single-call client
that costs what a compiled client costs, as the bare slurmrestd arm's plain HTTP client does
(bench/bare_restd.py), so that the two arms differ by red-box, not by their clients' languages.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections.abc import AsyncIterator

from line_arm import LINE_LIMIT, LineArm, ended


@contextlib.asynccontextmanager
async def go_submitter(
    binary: str, socket: str, script: str, partition: str, pids: list[int]
) -> AsyncIterator[LineArm]:
    """``wlmclient submit`` on red-box's ``socket`` (its pid appended to ``pids``)."""
    with tempfile.NamedTemporaryFile("w", prefix="go-submit-", suffix=".sh") as body:
        body.write(script)
        body.flush()
        proc = await asyncio.create_subprocess_exec(
            binary,
            "submit",
            "-socket",
            socket,
            "-script",
            body.name,
            "-partition",
            partition,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
        )
        pids.append(proc.pid)
        assert proc.stdout is not None
        assert proc.stdin is not None
        try:
            for _ in range(2):  # its "dial" and "ready" lines
                step = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30) or b"{}")
                if "error" in step or "step" not in step:
                    raise RuntimeError(f"wlmclient submit did not start: {step}")
            yield LineArm(proc, "wlmclient submit")
        finally:
            await ended(proc)
