"""The API server's side of kubelets: the proxies to their API and in-process host nodes.

kube-apiserver reaches a node's kubelet for ``pods/log`` (``logproxy``), ``pods/exec``
(``execproxy``) and ``nodes/{name}/proxy`` (``nodeproxy``), presenting its client certificate
(``kubeletclient``); ``metrics`` stands in for metrics-server, fed by the kubelets' Summary API;
``hostkubelet`` runs host nodes (``wlmvk_dev.hostnode``) beside the server, as its clients over
HTTP. The handler types the HTTP layer takes for these routes are defined here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web

    from wlmvk_dev.apiserver.kubelets.kubeletclient import KubeletClientCredentials
    from wlmvk_dev.apiserver.storage.store import Store

LogHandler = Callable[["web.Request", dict[str, Any], "Store"], Awaitable["web.StreamResponse"]]
"""``pods/{name}/log``: ``handler(request, pod, store)`` answers with the log (text/plain,
streamed when ``follow=true``). The request's query carries container, follow, tailLines,
limitBytes, sinceSeconds, sinceTime, timestamps, previous."""

ExecHandler = Callable[["web.Request", dict[str, Any], "Store"], Awaitable["web.StreamResponse"]]
"""``pods/{name}/exec``: ``handler(request, pod, store)`` upgrades the request and relays the
session with the pod's kubelet (``execproxy.py``). The query carries command, container, stdin,
stdout, stderr, tty."""


def default_log_handler(credentials: KubeletClientCredentials | None = None) -> LogHandler:
    """The log proxy of ``logproxy.py`` (it proxies to the node's kubelet), presenting
    ``credentials`` (``kubeletclient.issue``) to kubelets, as kube-apiserver does."""
    # Imported here: the proxy's module takes its handler type from this one.
    from wlmvk_dev.apiserver.kubelets import logproxy

    if credentials is not None:
        made: LogHandler = logproxy.make_handler(
            client_cert=str(credentials.cert), client_key=str(credentials.key)
        )
        return made
    return logproxy.handle
