"""The standard gRPC health service (grpc.health.v1.Health) for red-box.

Check answers SERVING for the whole server ("") and for
``api.WorkloadManager`` while red-box runs, NOT_SERVING once it shuts
down, and NOT_FOUND for a service it does not know, as the protocol says.
Watch sends the current status and then each change.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from grpclib import GRPCError
from grpclib.const import Status

from wlmvk._proto.grpc.health.v1 import (
    HealthBase,
    HealthCheckRequest,
    HealthCheckResponse,
    HealthCheckResponseServingStatus,
)

SERVICES = ("", "api.WorkloadManager")


class Health(HealthBase):  # type: ignore[misc]
    def __init__(self) -> None:
        self.status = HealthCheckResponseServingStatus.SERVING
        self._changed = asyncio.Event()

    def set_serving(self, serving: bool) -> None:
        self.status = (
            HealthCheckResponseServingStatus.SERVING
            if serving
            else HealthCheckResponseServingStatus.NOT_SERVING
        )
        self._changed.set()
        self._changed = asyncio.Event()

    async def check(self, health_check_request: HealthCheckRequest) -> HealthCheckResponse:
        if health_check_request.service not in SERVICES:
            raise GRPCError(Status.NOT_FOUND, f"unknown service {health_check_request.service!r}")
        return HealthCheckResponse(status=self.status)

    async def watch(self, health_check_request: HealthCheckRequest) -> AsyncIterator[HealthCheckResponse]:
        if health_check_request.service not in SERVICES:
            yield HealthCheckResponse(status=HealthCheckResponseServingStatus.SERVICE_UNKNOWN)
            return
        while True:
            changed = self._changed
            yield HealthCheckResponse(status=self.status)
            await changed.wait()
