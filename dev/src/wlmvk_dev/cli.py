"""``wlmvk dev``: local development entry points (the in-memory API server, a host node, the demo).

Reached through the ``wlmvk.dev`` entry point this distribution declares; each tool is
imported only when asked for, inside a function so the import is a checked edge.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def _apiserver(argv: list[str]) -> int:
    from wlmvk_dev.apiserver import app

    return app.main(argv)


def _node(argv: list[str]) -> int:
    from wlmvk_dev.hostnode import app

    return app.main(argv)


def _up(argv: list[str]) -> int:
    from wlmvk_dev import demo

    return demo.main(argv)


_TOOLS: dict[str, Callable[[list[str]], int]] = {"apiserver": _apiserver, "node": _node, "up": _up}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="wlmvk dev", description="local development tools")
    parser.add_argument(
        "tool",
        choices=sorted(_TOOLS),
        help="apiserver: the in-memory API server; node: a host node for any API server; up: the demo",
    )
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="the tool's own options")
    args = parser.parse_args(argv)
    return _TOOLS[args.tool](args.rest)
