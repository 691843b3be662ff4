"""A local file as the original (dptech) red-box's CreateFile request stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import IO

from wlmvk._proto import api


async def create_file_messages(
    remote: str, source: IO[bytes], chunk: int
) -> AsyncIterator[api.CreateFileRequest]:
    """``source`` sent as ``remote``: its path first, then its content in pieces of ``chunk`` bytes."""
    yield api.CreateFileRequest(path=remote)
    while data := await asyncio.to_thread(source.read, chunk):
        yield api.CreateFileRequest(content=data)
