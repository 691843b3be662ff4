"""The operator's command line: its flags, and their translation into ``OperatorSettings``.

Each app reads its command line in its ``flags.py`` (red-box's, the kubelet's, this one);
flags fall back on the environment a pod gives (POD_NAME, POD_NAMESPACE, WATCH_NAMESPACE).
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket

from wlmvk.core.names import DEFAULT_RED_BOX_SOCKET
from wlmvk.operator import ownimage
from wlmvk.operator.settings import DEFAULT_WORK_ROOT, OperatorSettings, StagingSettings


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="wlmvk operator", description="The SlurmJob/WlmJob controller.")
    p.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="kubeconfig (default: in-cluster)"
    )
    p.add_argument(
        "--namespace",
        default=os.environ.get("WATCH_NAMESPACE", ""),
        help="namespace to watch (env WATCH_NAMESPACE; default: all namespaces)",
    )
    p.add_argument(
        "--work-root",
        default=_env("WLMVK_WORK_ROOT", DEFAULT_WORK_ROOT),
        help="root of the jobs' working directories on the WLM side: <root>/<namespace>/<name>-<uid>"
        " (default: relative, i.e. under each red-box's --work-dir)",
    )
    p.add_argument(
        "--stage-image",
        default=os.environ.get("WLMVK_STAGE_IMAGE", ""),
        help="image of staging pods (default: the image of this pod's container 'operator', read from "
        f"the API server by env POD_NAME and POD_NAMESPACE; outside a pod: {ownimage.OUTSIDE_A_POD})",
    )
    p.add_argument(
        "--stage-command",
        default=_env("WLMVK_STAGE_COMMAND", ""),
        help="command that runs wlmvk in the staging image (split like a shell would; "
        "default: the image's entrypoint)",
    )
    p.add_argument(
        "--stage-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="environment variable of the staging containers (repeatable)",
    )
    p.add_argument(
        "--red-box-socket",
        default=DEFAULT_RED_BOX_SOCKET,
        help="host path of the red-box socket on agent hosts (when the virtual node does not say)",
    )
    p.add_argument("--run-as-user", type=int, default=1000, help="UID of the staging pods")
    p.add_argument("--run-as-group", type=int, default=1000, help="GID of the staging pods")
    p.add_argument(
        "--stage-timeout",
        type=int,
        default=3600,
        help="seconds one staging transfer may take; the staging pod's activeDeadlineSeconds adds "
        "300 s to start it",
    )
    p.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="elect one leader among replicas through a Lease",
    )
    p.add_argument("--lease-name", default="wlmvk-operator-lock", help="name of the leader Lease")
    p.add_argument(
        "--lease-namespace",
        default=_env("POD_NAMESPACE", "default"),
        help="namespace of the leader Lease (env POD_NAMESPACE)",
    )
    p.add_argument("--lease-duration", type=int, default=15, help="seconds a leader Lease lasts unrenewed")
    p.add_argument("--renew-interval", type=float, default=5.0, help="seconds between Lease renewals")
    p.add_argument(
        "--retry-interval",
        type=float,
        default=2.0,
        help="seconds between a candidate's looks at a Lease another replica holds",
    )
    p.add_argument(
        "--identity",
        default=_env("POD_NAME", f"{socket.gethostname()}-{os.getpid()}"),
        help="this replica's name in the Lease (env POD_NAME)",
    )
    p.add_argument(
        "--health-port", type=int, default=0, help="port of /healthz and /readyz (0: no probe server)"
    )
    p.add_argument("--resync", type=float, default=60.0, help="seconds between full re-examinations")
    p.add_argument(
        "--workers", type=int, default=16, help="resources reconciled at once (one worker per resource)"
    )
    p.add_argument("--log-level", default="info", help="debug, info, warning or error")
    return p


def _pair(item: str) -> tuple[str, str]:
    name, eq, value = item.partition("=")
    if not eq or not name:
        raise SystemExit(f"wlmvk operator: --stage-env wants NAME=VALUE, not {item!r}")
    return name, value


def settings_from(args: argparse.Namespace) -> OperatorSettings:
    pod = ownimage.own_pod(os.environ)
    return OperatorSettings(
        work_root=args.work_root,
        namespace=args.namespace,
        staging=StagingSettings(
            # Empty in a pod: read from the pod at start (resolve_stage_image).
            image=args.stage_image or ("" if pod else ownimage.OUTSIDE_A_POD),
            command=tuple(shlex.split(args.stage_command)),
            socket_host_path=args.red_box_socket,
            run_as_user=args.run_as_user,
            run_as_group=args.run_as_group,
            env=tuple(_pair(item) for item in args.stage_env),
            timeout=args.stage_timeout,
        ),
        leader_election=args.leader_elect,
        lease_name=args.lease_name,
        lease_namespace=args.lease_namespace,
        lease_duration=args.lease_duration,
        renew_interval=args.renew_interval,
        retry_interval=args.retry_interval,
        identity=args.identity,
        resync_interval=args.resync,
        workers=max(1, args.workers),
        health_port=args.health_port,
        own_pod=pod,
    )
