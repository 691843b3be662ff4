"""Host nodes run alongside the in-memory API server, as its clients over HTTP.

``controller(node_name=...)`` is a :class:`~controllers.ClientController`: the
server starts it with its own URL, and it runs the host node of
``wlmvk_dev.hostnode`` (the code of ``wlmvk dev node``) in-process, with a
``KubeClient`` to that URL. Its kubelet API listens on a free port (unless
told otherwise), so ``logproxy`` reaches its pods' logs as any node's.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from wlmvk.kube.client import KubeClient
from wlmvk_dev.apiserver.controllers import ClientController
from wlmvk_dev.hostnode import kubelet
from wlmvk_dev.hostnode.config import NodeConfig


def controller(config: NodeConfig | None = None, **overrides: Any) -> ClientController:
    """A host node for ``ApiServer(controllers=[...])``; the kubelet API on a free port by default."""
    settings = replace(config or NodeConfig(kubelet_port=0), **overrides)

    async def run(url: str) -> None:
        client = await KubeClient.at(url)
        try:
            await kubelet.run(client, settings)
        finally:
            await client.close()

    return ClientController(run, name=f"host-node:{settings.node_name}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command-line options of ``wlmvk dev apiserver`` that start host nodes."""
    parser.add_argument(
        "--host-node",
        action="append",
        default=[],
        metavar="NAME",
        help="register node NAME and run the pods bound to it as local processes (repeatable)",
    )
    parser.add_argument(
        "--host-node-label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra label of the host nodes (repeatable)",
    )
    parser.add_argument(
        "--host-node-address", default="127.0.0.1", help="InternalIP of the host nodes (default 127.0.0.1)"
    )


def controllers_from(args: argparse.Namespace) -> list[ClientController]:
    """Host node controllers for the options of :func:`add_arguments`."""
    labels = dict(item.partition("=")[::2] for item in args.host_node_label)
    return [
        controller(node_name=name, labels=labels, address=args.host_node_address) for name in args.host_node
    ]
