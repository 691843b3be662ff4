"""The ``wlmvk`` and ``red-box`` commands: pick a subcommand and hand it argv.

Each subcommand lives in its own application module with a
``main(argv: list[str]) -> int``; they are imported lazily so that
``red-box`` never loads Kubernetes code.
"""

from __future__ import annotations

import importlib
import sys

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "red-box": ("wlmvk.redbox.app", "the WLM gRPC daemon on the Slurm login node"),
    "kubelet": ("wlmvk.kubelet.app", "the virtual kubelet: partitions as nodes, pods as jobs"),
    "operator": ("wlmvk.operator.app", "the SlurmJob/WlmJob controller"),
    "stage": ("wlmvk.staging.app", "stage data in or out through red-box (staging pods)"),
    "dev": ("wlmvk.devtools", "local development: apiserver, up (the demo)"),
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
    module = importlib.import_module(entry[0])
    code: int = module.main(args[1:])
    return code


def red_box() -> int:
    """The ``red-box`` console script."""
    module = importlib.import_module("wlmvk.redbox.app")
    code: int = module.main(sys.argv[1:])
    return code


def run() -> None:
    sys.exit(main())


def run_red_box() -> None:
    sys.exit(red_box())
