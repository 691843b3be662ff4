"""``wlmvk dev apiserver``: serve the in-memory API server until stopped, with a kubeconfig."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from pathlib import Path

import structlog

from wlmvk.core import loop as event_loop
from wlmvk.core.logging import configure
from wlmvk_dev.apiserver.controllers import default_controllers
from wlmvk_dev.apiserver.kubelets import (
    default_log_handler,
    execproxy,
    hostkubelet,
    kubeletclient,
    metrics,
    nodeproxy,
)
from wlmvk_dev.apiserver.server import ApiServer, Config

_log = structlog.get_logger(__name__)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="wlmvk dev apiserver", description="in-memory Kubernetes API server")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=6443, help="TCP port (0 picks a free one; default 6443)")
    p.add_argument("--kubeconfig", required=True, help="where to write a kubeconfig for kubectl")
    p.add_argument("--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks")
    p.add_argument("--history", type=int, default=10_000, help="watch events kept per resource type")
    p.add_argument("--no-controllers", action="store_true", help="do not run scheduler/gc/node lifecycle")
    p.add_argument(
        "--kubelet-client-dir",
        default="",
        help="where to write the client certificate the log proxy presents to kubelets and its CA"
        " (kubelet-client-ca.crt: each kubelet's --client-ca; default: the kubeconfig's directory)",
    )
    p.add_argument("--log-level", default="info", help="debug, info, warning, error")
    hostkubelet.add_arguments(p)
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    configure(args.log_level)
    try:
        event_loop.run(serve(args))
    except KeyboardInterrupt:
        pass
    return 0


async def serve(args: argparse.Namespace) -> None:
    config = Config(
        host=args.host, port=args.port, bookmark_interval=args.bookmark_interval, history=args.history
    )
    credentials = kubeletclient.issue(Path(args.kubelet_client_dir or Path(args.kubeconfig).parent))
    server = ApiServer(
        config,
        controllers=[
            *([] if args.no_controllers else default_controllers()),
            *hostkubelet.controllers_from(args),
        ],
        log_handler=default_log_handler(credentials),
        metrics=metrics.make_handler(client_cert=str(credentials.cert), client_key=str(credentials.key)),
        exec_handler=execproxy.make_handler(
            client_cert=str(credentials.cert), client_key=str(credentials.key)
        ),
        node_proxy=nodeproxy.make_handler(client_cert=str(credentials.cert), client_key=str(credentials.key)),
    )
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stopping.set)
    async with server:
        path = server.write_kubeconfig(args.kubeconfig)
        _log.info("serving", url=server.url, kubeconfig=str(path))
        print(
            f"wlmvk apiserver: {server.url} (kubeconfig {path}; kubelets' --client-ca {credentials.ca})",
            flush=True,
        )
        await stopping.wait()
