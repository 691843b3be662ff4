"""``wlmvk dev node``: a host node for any API server, until SIGINT or SIGTERM.

Registers the Node, runs the pods bound to it as processes on this machine and
serves their logs on the kubelet API. Once registered it prints one line,
``wlmvk node: NAME kubelet API https://ADDRESS:PORT``, and then logs to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import signal

from wlmvk.core.logging import configure
from wlmvk.core.tasks import guarded, stop
from wlmvk.kube.client import KubeClient
from wlmvk_dev.hostnode import kubelet
from wlmvk_dev.hostnode.config import (
    NodeConfig,
    default_node_name,
    default_path,
    parse_image,
    parse_labels,
    parse_taints,
    service_env,
)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="wlmvk dev node", description="a host node: pods run as local processes")
    p.add_argument("--kubeconfig", required=True, help="kubeconfig of the API server to join")
    p.add_argument("--context", default=None, help="kubeconfig context (default: the current one)")
    p.add_argument("--name", default=default_node_name(), help="node name (default: the short host name)")
    p.add_argument("--labels", default="", help="extra node labels, k=v,k2=v2")
    p.add_argument("--taints", default="", help="node taints, key=value:Effect,key:Effect")
    p.add_argument("--address", default="127.0.0.1", help="InternalIP, where the kubelet API listens")
    p.add_argument("--port", type=int, default=10250, help="kubelet API port (0 picks a free one)")
    p.add_argument("--tls-cert", default="", help="kubelet API certificate (default: self-signed)")
    p.add_argument("--tls-key", default="", help="its key")
    p.add_argument("--root", default=None, help="pod directories and logs (default: a fresh /tmp directory)")
    p.add_argument(
        "--path", default=default_path(), help="PATH of the containers (default: venv, then /usr...)"
    )
    p.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="IMAGE=COMMAND",
        help="run COMMAND for a container of IMAGE that sets no command (its entrypoint); repeatable",
    )
    p.add_argument(
        "--image-path",
        action="append",
        default=[],
        metavar="DIR",
        help="a host directory the --image programs need, kept visible under their volumes; repeatable",
    )
    p.add_argument("--isolation", choices=("auto", "namespace", "symlink"), default="auto", help="volumes")
    p.add_argument("--renew-interval", type=float, default=10.0, help="seconds between Lease renewals")
    p.add_argument("--restart-backoff", type=float, default=10.0, help="first container restart back-off")
    p.add_argument("--log-level", default="info", help="debug, info, warning, error")
    return p.parse_args(argv)


def config_from(args: argparse.Namespace) -> NodeConfig:
    return NodeConfig(
        node_name=args.name,
        labels=parse_labels(args.labels),
        taints=parse_taints(args.taints),
        address=args.address,
        kubelet_port=args.port,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        root=args.root,
        path=args.path,
        isolation=args.isolation,
        renew_interval=args.renew_interval,
        restart_backoff=args.restart_backoff,
        images=dict(parse_image(item) for item in args.image),
        image_paths=tuple(args.image_path),
    )


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        config = config_from(args)
    except ValueError as exc:
        print(f"wlmvk dev node: {exc}")
        return 2
    configure(args.log_level)
    return asyncio.run(serve(config, kubeconfig=args.kubeconfig, context=args.context))


async def serve(config: NodeConfig, *, kubeconfig: str, context: str | None) -> int:
    """Run the node until a signal (0) or its failure (1)."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stopping.set)

    def announce(port: int) -> None:
        print(f"wlmvk node: {config.node_name} kubelet API https://{config.address}:{port}", flush=True)

    client = await KubeClient.connect(kubeconfig, context=context)
    config = dataclasses.replace(config, service_env=service_env(client.host))
    try:
        node = guarded(
            kubelet.run(client, config, on_registered=announce), name=f"host-node:{config.node_name}"
        )
        waiting = asyncio.ensure_future(stopping.wait())
        await asyncio.wait([node, waiting], return_when=asyncio.FIRST_COMPLETED)
        failed = node.done() and not node.cancelled() and node.exception() is not None
        await stop(node, waiting)
        return 1 if failed else 0
    finally:
        await client.close()
