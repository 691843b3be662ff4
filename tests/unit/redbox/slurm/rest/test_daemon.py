"""The supervisor's liveness look: a slurmrestd that stops answering is replaced, one that answers is kept.

The process supervised here is a few lines of Python taking slurmrestd's place (its last argument
``unix:PATH``): it accepts connections and answers every request with 404, or, once the file
``hang`` beside its socket exists, reads requests and answers none, as a slurmrestd whose workers
are stuck does. The real slurmrestd stopped by SIGSTOP is tests/faults/test_redbox_restd_kill.py's.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from wlmvk.redbox.slurm.rest import daemon as restd_module
from wlmvk.redbox.slurm.rest.daemon import Restd

STANDIN = """
import asyncio, os, sys
path = sys.argv[-1].removeprefix("unix:")
hang = os.path.join(os.path.dirname(path), "hang")

async def serve(reader, writer):
    while await reader.readuntil(b"\\r\\n\\r\\n"):
        if os.path.exists(hang):
            await asyncio.sleep(3600)
        writer.write(b"HTTP/1.1 404 Not Found\\r\\nContent-Length: 0\\r\\n\\r\\n")
        await writer.drain()

async def main():
    server = await asyncio.start_unix_server(serve, path)
    await server.serve_forever()

asyncio.run(main())
"""


@pytest.fixture
async def supervised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Restd]:
    monkeypatch.setattr(restd_module, "LIVENESS_PERIOD", 0.1)
    binary = tmp_path / "slurmrestd"
    binary.write_text(f"#!{sys.executable}\n{STANDIN}")
    binary.chmod(0o755)
    supervisor = Restd(version="v0.0.38", binary=str(binary), timeout=5)
    supervisor.liveness_timeout = 0.5
    task = asyncio.ensure_future(supervisor.run())
    assert await supervisor.ready(10)
    yield supervisor
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def _pid(supervisor: Restd) -> int:
    assert supervisor._proc is not None
    return supervisor._proc.pid


async def test_one_that_answers_is_kept(supervised: Restd) -> None:
    first = _pid(supervised)
    await asyncio.sleep(1.5)  # many looks, each answered
    assert _pid(supervised) == first
    assert supervised.client is not None


async def test_one_that_answers_nothing_is_replaced_within_the_bound(supervised: Restd) -> None:
    first = _pid(supervised)
    Path(supervised.socket).with_name("hang").touch()
    loop = asyncio.get_running_loop()
    started = loop.time()
    while _pid(supervised) == first and loop.time() - started < 5:
        await asyncio.sleep(0.05)
    # A look every 0.1 s, unanswered for 0.5 s: replaced within about 0.6 s and started again.
    assert _pid(supervised) != first
    assert loop.time() - started < 2.0
