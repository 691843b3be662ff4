"""The host node's kubelet HTTPS API: ``/containerLogs`` and ``/healthz``.

What kube-apiserver calls for ``kubectl logs`` (``-f``, ``--tail``,
``--limit-bytes``, ``--timestamps``, ``--since``, ``--previous``): the
container's log files, read with ``logs.read``. Errors answer as a kubelet
does, in plain text: 400 for a bad query or a container that has no log (yet),
404 for a pod this node does not run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import structlog
from aiohttp import web

from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk_dev.hostnode import logs

_log = structlog.get_logger(__name__)

LogFile = tuple[Path, Callable[[], bool]]
FindLog = Callable[[str, str, str, bool], LogFile]
"""(namespace, pod, container, previous) -> the log file and whether its container still runs;
raises ``NotFound`` (no such pod: 404) or ``InvalidInput`` (no log for that container: 400)."""


def _error(code: int, message: str) -> web.HTTPException:
    error = web.HTTPException(text=message + "\n", content_type="text/plain")
    error.set_status(code)
    return error


def kubelet_app(find_log: FindLog) -> web.Application:
    app = web.Application()

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def container_logs(request: web.Request) -> web.StreamResponse:
        info = request.match_info
        try:
            options = logs.LogOptions.from_query(request.query)
            path, running = find_log(info["namespace"], info["pod"], info["container"], options.previous)
        except InvalidInput as exc:
            raise _error(400, exc.message) from exc
        except NotFound as exc:
            raise _error(404, exc.message) from exc
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            async for chunk in logs.read(path, options, running=running):
                await response.write(chunk)
            await response.write_eof()
        except ConnectionError as exc:
            _log.debug("log reader went away", path=str(path), error=str(exc))
        return response

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", container_logs)
    return app
