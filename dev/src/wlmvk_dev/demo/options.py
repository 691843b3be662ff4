"""The command line of ``wlmvk dev up`` (``scripts/demo``): its options and their help."""

from __future__ import annotations

import argparse

from wlmvk_dev.demo.clusters import ROOT


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="wlmvk dev up",
        description="Start Slurm, red-box, the API server, kubelets and the operator; run examples/.",
    )
    parser.add_argument(
        "action", nargs="?", choices=["up", "down"], default="up", help="down: stop a kept demo"
    )
    parser.add_argument("--keep", action="store_true", help="leave everything running after the examples")
    parser.add_argument("--state-dir", default="/var/tmp/wlmvk-demo", help="logs, pids and kubeconfig")
    parser.add_argument("--port", type=int, default=6443, help="the API server's port on 127.0.0.1")
    parser.add_argument("--examples", default=str(ROOT / "examples"), help="directory of example manifests")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds each example may take")
    parser.add_argument(
        "--kube",
        choices=["memory", "real"],
        default="memory",
        help="control plane: the in-memory API server, or a real one built by dev/scripts/kube-local",
    )
    parser.add_argument(
        "--tenants",
        action="store_true",
        help="also run two tenants (docs/tenancy.md) on a Slurm of the demo's own; print their jobs' sacct",
    )
    return parser.parse_args(argv)
