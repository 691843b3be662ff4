"""Helpers of the fault suite: raw gRPC calls that report a status, and a process's memory."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Cardinality, Status
from grpclib.encoding.base import CodecBase

from wlmvk._proto import api

SERVICE = "/api.WorkloadManager/"
HEALTHY = "healthy"


class RawCodec(CodecBase):
    """Sends bytes as they are and hands replies back undecoded: garbage on the wire, as a client."""

    __content_subtype__ = "proto"

    def encode(self, message: Any, message_type: Any) -> bytes:
        return bytes(message)

    def decode(self, data: bytes, message_type: Any) -> Any:
        return data


def rss_kib(pid: int) -> int:
    """Resident set size of a process, from /proc (KiB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


async def raw_call(socket: str, rpc: str, payloads: list[bytes], *, timeout: float = 10.0) -> Status:
    """Send ``payloads`` as request messages of ``rpc``; the status red-box answered (OK included)."""
    channel = Channel(path=socket, codec=RawCodec())
    try:
        async with channel.request(
            SERVICE + rpc, Cardinality.STREAM_STREAM, bytes, bytes, timeout=timeout
        ) as stream:
            for index, payload in enumerate(payloads):
                await stream.send_message(payload, end=index == len(payloads) - 1)
            if not payloads:
                await stream.send_request(end=True)
            async for _ in stream:
                pass
        return Status.OK
    except GRPCError as exc:
        return exc.status
    finally:
        channel.close()


async def status_of(call: Any, *, timeout: float = 10.0) -> Status:
    """Await a stub call (or drain a stream call); OK or the GRPCError's status."""
    try:
        async with asyncio.timeout(timeout):
            result = call
            if hasattr(result, "__aiter__"):
                async for _ in result:
                    pass
            else:
                await result
        return Status.OK
    except GRPCError as exc:
        return exc.status


async def serving(socket: str) -> bool:
    """red-box still answers a plain call."""
    channel = Channel(path=socket)
    try:
        reply = await api.WorkloadManagerStub(channel).partitions(api.PartitionsRequest(), timeout=30)
        return bool(reply.partition)
    finally:
        with contextlib.suppress(Exception):
            channel.close()
