"""HTTP/1.1 to slurmrestd over its Unix socket: a few kept-alive connections, nothing more.

red-box talks to one local slurmrestd with small JSON requests; what it
needs from HTTP is a request line, two headers and a ``Content-Length``
body back. A general client (aiohttp) costs several times the CPU per
request of these few lines, on the path every submission takes.

The one distinction that matters to a caller: ``NotSent`` means the
request never left (no connection could be made), so nothing can have
happened; ``Lost`` means it may have reached slurmrestd, which may have
acted on it (a submission may exist) although no answer came back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass


class NotSent(Exception):
    """No connection to slurmrestd: the request was not sent."""


class Lost(Exception):
    """The request was sent (or may have been) and no whole answer came back."""


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    closing: bool = False


_Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Client:
    """Requests to the slurmrestd listening on ``path``, at most ``connections`` at once.

    Every wait is bounded by ``timeout``: a free slot (``NotSent`` when none frees), the
    connection (``NotSent``), the answer (``Lost``).
    """

    def __init__(self, path: str, *, connections: int = 8, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self.answered_at = time.monotonic()
        """When slurmrestd last gave a whole answer (monotonic): the liveness look reads it."""
        self._gate = asyncio.Semaphore(connections)
        self._idle: list[_Connection] = []

    async def request(self, method: str, target: str, body: bytes | None = None) -> Response:
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for wraps each await in a task
            # of its own, two per request on the path every submission takes.
            async with asyncio.timeout(self.timeout):
                await self._gate.acquire()
        except TimeoutError as exc:
            raise NotSent(
                f"slurmrestd: {method} {target}: no connection free within {self.timeout:g} s"
            ) from exc
        try:
            return await self._request(method, target, body)
        finally:
            self._gate.release()

    async def _request(self, method: str, target: str, body: bytes | None) -> Response:
        connection = self._idle.pop() if self._idle else await self._connect()
        try:
            async with asyncio.timeout(self.timeout):
                response = await self._exchange(connection, method, target, body)
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
            _close(connection)
            raise Lost(f"slurmrestd: {method} {target}: no answer ({exc or type(exc).__name__})") from exc
        except BaseException:
            _close(connection)
            raise
        self.answered_at = time.monotonic()
        if response.status < 400 and not response.closing:
            self._idle.append(connection)
        else:
            _close(connection)  # slurmrestd closes a connection after an error answer
        return response

    async def look(self, target: str, timeout: float) -> bool:
        """Whether slurmrestd answers ``GET target`` within ``timeout``, on a connection of its own
        (outside the slots: a look must not wait behind the requests it checks on)."""
        try:
            connection = await asyncio.wait_for(self._connect(), timeout)
        except (NotSent, TimeoutError):
            return False
        try:
            await asyncio.wait_for(self._exchange(connection, "GET", target, None), timeout)
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError):
            return False
        finally:
            _close(connection)
        self.answered_at = time.monotonic()
        return True

    async def _connect(self) -> _Connection:
        try:
            return await asyncio.wait_for(asyncio.open_unix_connection(self.path), self.timeout)
        except TimeoutError as exc:
            raise NotSent(f"slurmrestd at {self.path}: no connection within {self.timeout:g} s") from exc
        except OSError as exc:
            raise NotSent(f"slurmrestd at {self.path}: {exc.strerror or exc}") from exc

    async def _exchange(
        self, connection: _Connection, method: str, target: str, body: bytes | None
    ) -> Response:
        reader, writer = connection
        head = f"{method} {target} HTTP/1.1\r\nHost: slurmrestd\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        writer.write(head.encode() + b"\r\n" + (body or b""))
        await writer.drain()
        status_line = await reader.readuntil(b"\r\n")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
        status = int(parts[1])
        length = 0
        closing = False
        while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value.strip())
            elif name == b"connection":
                closing = value.strip().lower() == b"close"
        return Response(status, await reader.readexactly(length) if length else b"", closing)

    def close(self) -> None:
        """Drop the kept connections (slurmrestd was restarted, or red-box stops)."""
        while self._idle:
            _close(self._idle.pop())


def _close(connection: _Connection) -> None:
    with contextlib.suppress(Exception):
        connection[1].close()
