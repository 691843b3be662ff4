"""The ``wlmvk`` and ``red-box`` commands: pick a subcommand and hand it argv.

Each subcommand lives in its own application module with a
``main(argv: list[str]) -> int``. The imports sit inside small functions, not in
strings, so the layer contracts see every edge while ``red-box`` still never
loads Kubernetes code. ``wlmvk dev`` belongs to the separate ``wlmvk-dev``
distribution (the in-memory API server, the host node, the demo), found through
its ``wlmvk.dev`` entry point so that the product never imports it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.metadata import entry_points

Main = Callable[[list[str]], int]


def _red_box(argv: list[str]) -> int:
    from wlmvk.redbox import app

    return app.main(argv)


def _kubelet(argv: list[str]) -> int:
    from wlmvk.kubelet import app

    return app.main(argv)


def _operator(argv: list[str]) -> int:
    from wlmvk.operator import app

    return app.main(argv)


def _stage(argv: list[str]) -> int:
    from wlmvk.staging import app

    return app.main(argv)


DEV_MISSING = (
    "wlmvk dev: the development tools are not installed. They are the separate wlmvk-dev\n"
    "distribution in the dev/ folder of a wlmvk checkout: pip install -e ./dev\n"
    "(dev/scripts/bootstrap installs it)."
)


def _dev(argv: list[str]) -> int:
    found = entry_points(group="wlmvk.dev", name="main")
    if not found:
        print(DEV_MISSING, file=sys.stderr)
        return 2
    tool: Main = next(iter(found)).load()
    return tool(argv)


SUBCOMMANDS: dict[str, tuple[Main, str]] = {
    "red-box": (_red_box, "the WLM gRPC daemon on the Slurm login node"),
    "kubelet": (_kubelet, "the virtual kubelet: partitions as nodes, pods as jobs"),
    "operator": (_operator, "the SlurmJob/WlmJob controller"),
    "stage": (_stage, "stage data in or out through red-box (staging pods)"),
    "dev": (_dev, "local development (wlmvk-dev): apiserver, node, up (the demo)"),
}


def _usage() -> str:
    lines = ["usage: wlmvk <command> [options]", "", "commands:"]
    lines += [f"  {name:<10} {text}" for name, (_, text) in SUBCOMMANDS.items()]
    lines += ["", "wlmvk <command> --help describes a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in {"-h", "--help", "help"}:
        print(_usage())
        return 0
    if args[0] in {"--version", "version"}:
        from wlmvk import __version__

        print(__version__)
        return 0
    entry = SUBCOMMANDS.get(args[0])
    if entry is None:
        print(f"wlmvk: unknown command {args[0]!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    return entry[0](args[1:])


def red_box() -> int:
    """The ``red-box`` console script."""
    return _red_box(sys.argv[1:])


def run() -> None:
    sys.exit(main())


def run_red_box() -> None:
    sys.exit(red_box())
