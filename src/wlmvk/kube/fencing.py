"""A KubeClient that writes only while a check passes: the fenced holder of a Lease.

A process that serves as the holder of a Lease (``leader.Elector``) passes its
writes through ``FencedClient``: every request but a read (GET) first calls
``check``, which raises ``leader.Fenced`` once the holder's proof has expired
and else says how many seconds it lasts; the request must be answered within
those (its HTTP timeout), so a holder cut off from the API server or frozen
(SIGSTOP) sends nothing, and waits for nothing, after a successor may have
taken over. Reads and watches go through as usual.
The client shares the connection pool of the client it wraps; close that one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wlmvk.kube.bodies import Body
from wlmvk.kube.client import KubeClient, Query


class FencedClient(KubeClient):
    def __init__(self, inner: KubeClient, *, check: Callable[[], float]) -> None:
        super().__init__(inner._api, timeout=inner._timeout)
        self._check = check

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Body:
        if method != "GET":
            left = self._check()
            timeout = min(left, timeout if timeout is not None else self._timeout)
        return await super().request(
            method, path, query=query, body=body, content_type=content_type, timeout=timeout
        )

    async def close(self) -> None:
        """The wrapped client owns the connections."""
