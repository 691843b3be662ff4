"""``wlmvk dev``: local development entry points (the in-memory API server, the demo)."""

from __future__ import annotations

import argparse
import importlib

_TOOLS = {
    "apiserver": "wlmvk.testing.apiserver.app",
    "up": "wlmvk.testing.demo",
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="wlmvk dev", description="local development tools")
    parser.add_argument(
        "tool", choices=sorted(_TOOLS), help="apiserver: serve the in-memory API server; up: run the demo"
    )
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="the tool's own options")
    args = parser.parse_args(argv)
    module = importlib.import_module(_TOOLS[args.tool])
    code: int = module.main(args.rest)
    return code
