"""``wlmvk dev``: local development entry points (the in-memory API server, a host node, the demo)."""

from __future__ import annotations

import argparse
import importlib

_TOOLS = {
    "apiserver": "wlmvk.testing.apiserver.app",
    "node": "wlmvk.testing.hostnode.app",
    "up": "wlmvk.testing.demo",
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="wlmvk dev", description="local development tools")
    parser.add_argument(
        "tool",
        choices=sorted(_TOOLS),
        help="apiserver: the in-memory API server; node: a host node for any API server; up: the demo",
    )
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="the tool's own options")
    args = parser.parse_args(argv)
    module = importlib.import_module(_TOOLS[args.tool])
    code: int = module.main(args.rest)
    return code
