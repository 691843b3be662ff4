"""The kubelet's command line: its flags, and their translation into ``settings.Settings``.

Each app reads its command line in its ``flags.py`` (red-box's, the operator's, this one);
what can be checked before anything starts is checked here, each error naming its flag.
"""

from __future__ import annotations

import argparse
import os
import re
import socket

from wlmvk.core import names, runtimes
from wlmvk.core.errors import InvalidInput
from wlmvk.kubelet.api.auth import gate
from wlmvk.kubelet.node import addresses
from wlmvk.kubelet.settings import DEFAULT_METRICS_PORT, ClusterSettings, Settings
from wlmvk.slurm import gpus

_CLUSTER_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?")


def parse(argv: list[str]) -> Settings:
    parser = argparse.ArgumentParser(
        prog="wlmvk kubelet",
        description="Serve every Slurm partition of one red-box as a Kubernetes node; run its pods as jobs.",
    )
    add = parser.add_argument
    add(
        "--red-box-socket",
        default=None,
        help=f"red-box's Unix socket (default {names.DEFAULT_RED_BOX_SOCKET})",
    )
    add(
        "--cluster",
        action="append",
        default=[],
        metavar="NAME=SOCKET",
        help="serve cluster NAME (nodes slurm-NAME-<partition>) through the red-box at SOCKET; repeat to"
        " serve several clusters from this one process (instead of --cluster-name and --red-box-socket;"
        " then --red-box takes NAME:USER=SOCKET)",
    )
    add(
        "--red-box",
        action="append",
        default=[],
        metavar="USER=SOCKET",
        help="the Unix socket of the red-box that runs as Slurm user USER: the jobs of the namespaces a"
        " SlurmTenant maps to USER go there (repeat per tenant user; docs/tenancy.md)",
    )
    add("--kubeconfig", default=None, help="kubeconfig file (default: in-cluster, else ~/.kube/config)")
    add(
        "--cluster-name",
        default=None,
        help="the <cluster> in node names slurm-<cluster>-<partition> (default: $NODE_NAME, $HOST_NAME,"
        " else the host name: the original named nodes after the agent host)",
    )
    add(
        "--agent-host",
        default="",
        help="Kubernetes node name of this host, for staging pods (default: $NODE_NAME, $HOST_NAME)",
    )
    add(
        "--node-ip",
        default="",
        help="InternalIP of the nodes, where the API server reaches this kubelet (default: $NODE_IP,"
        " else --listen's address when it is one, else the host's address on its default route as"
        " the real kubelet chooses it, 127.0.0.1 without one). kube-apiserver proxies to no"
        " loopback address",
    )
    add("--listen", default="0.0.0.0", help="address of the kubelet HTTPS API")
    add("--port", type=int, default=10250, help="port of the kubelet HTTPS API (0 = any free port)")
    add(
        "--metrics-listen",
        default="127.0.0.1",
        help="address of the Prometheus /metrics endpoint (plain HTTP, no authentication: loopback"
        " unless set, e.g. to 0.0.0.0 for a scraper on the pod network)",
    )
    add(
        "--metrics-port",
        type=int,
        default=DEFAULT_METRICS_PORT,
        help="port of /metrics (0 = any free port, -1 = off; default %(default)s)",
    )
    add("--tls-cert", default="", help="server certificate (PEM); default: a self-signed one made at start")
    add("--tls-key", default="", help="key of --tls-cert (PEM)")
    add(
        "--client-ca",
        default="",
        help="CA bundle of client certificates: a client presenting one it signed is the user of its"
        " CommonName, in the groups of its Organizations (kube-apiserver's --kubelet-client-certificate)",
    )
    add(
        "--anonymous-auth",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="let requests without credentials in as system:anonymous, to be authorized (default: off, 401)",
    )
    add(
        "--authentication-token-webhook",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="authenticate bearer tokens with a TokenReview to the API server (default: on)",
    )
    add(
        "--authorization-mode",
        choices=gate.AUTHORIZATION_MODES,
        default=gate.WEBHOOK,
        help="Webhook: a SubjectAccessReview of nodes/proxy, nodes/log... per request, as the kubelet;"
        " AlwaysAllow: any authenticated request (default %(default)s)",
    )
    add("--status-interval", type=float, default=5.0, help="seconds between batched job state queries")
    add(
        "--stats-interval",
        type=float,
        default=10.0,
        help="seconds one batched usage query (sstat) of the running jobs answers /stats/summary",
    )
    add("--discovery-interval", type=float, default=30.0, help="seconds between partition re-discoveries")
    add("--node-status-interval", type=float, default=60.0, help="max seconds between node status writes")
    add("--lease-duration", type=int, default=40, help="node Lease duration in seconds")
    add("--lease-renew-interval", type=float, default=10.0, help="seconds between Lease renewals")
    add("--max-pods", type=int, default=1000, help="pods capacity of each node")
    add(
        "--jobs-root",
        default="pods",
        help="per-pod working dirs go under <jobs-root>/<namespace>/<pod>-<uid>: relative to red-box's"
        " working root, or absolute inside a root red-box allows",
    )
    add(
        "--gpu-name",
        action="append",
        default=[],
        metavar="RESOURCE=TYPE",
        help="an extended resource that asks for GPUs of a Slurm GRES type (nvidia.com/a100=a100);"
        " repeatable. Without one: nvidia.com/gpu any GPU, nvidia.com/mig-<profile> and"
        " nvidia.com/gpu.<type> that type",
    )
    add(
        "--sif-gpu-flags",
        default=" ".join(runtimes.GPU_FLAGS),
        metavar="FLAGS",
        help="Apptainer's/Singularity's options for a plain pod's image with GPUs, space-separated,"
        " given as --sif-gpu-flags=FLAGS (default --nv; --rocm for AMD GPUs, --nvccli for NVIDIA's"
        " container CLI; '' none)",
    )
    add("--workers", type=int, default=32, help="pods reconciled concurrently")
    add("--submissions", type=int, default=16, help="job submissions in flight to each red-box at once")
    add(
        "--websockets-to-kubelet",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="on a v1.36+ API server, nodes declare ExtendWebSocketsToKubelet (status.declaredFeatures), as"
        " a real kubelet does: kube-apiserver passes exec's WebSocket through instead of translating it"
        " to SPDY (default: on)",
    )
    add("--wlm-timeout", type=float, default=30.0, help="seconds before a red-box call counts as failed")
    add("--log-level", default="info", help="debug, info, warning or error")
    add(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="one of the kubelets run for this --cluster-name (on several agent hosts) serves its nodes,"
        " holding the Lease slurm-<cluster>.kubelet in kube-node-lease; the others stand by and take over"
        " when it expires (default: off, this kubelet serves alone)",
    )
    add(
        "--leader-lease-duration",
        type=int,
        default=15,
        help="seconds the cluster Lease lasts unrenewed: a standby takes over within this plus two"
        " --leader-retry-interval after the holder's last renewal (default %(default)s)",
    )
    add("--leader-renew-interval", type=float, default=5.0, help="seconds between the holder's renewals")
    add(
        "--leader-retry-interval",
        type=float,
        default=2.0,
        help="seconds between a standby's looks at the cluster Lease (default %(default)s)",
    )
    args = parser.parse_args(argv)
    if args.leader_elect and not 0 < args.leader_renew_interval < args.leader_lease_duration - 2:
        parser.error(
            f"--leader-renew-interval ({args.leader_renew_interval:g}) must be above 0 and below"
            f" --leader-lease-duration minus 2 s ({args.leader_lease_duration - 2}): the holder stops"
            " writing 2 s before its last renewal runs out"
        )
    agent = args.agent_host or os.environ.get("NODE_NAME", "") or os.environ.get("HOST_NAME", "")
    clusters = _clusters(parser, args) if args.cluster else ()
    red_boxes = () if args.cluster else _red_boxes(parser, args.red_box)
    return Settings(
        red_box_socket=clusters[0].red_box_socket if clusters else _or_default(args.red_box_socket),
        red_boxes=red_boxes,
        clusters=clusters,
        kubeconfig=args.kubeconfig,
        cluster_name=(clusters[0].name if clusters else args.cluster_name)
        or agent
        or socket.gethostname().split(".")[0],
        agent_host=agent,
        node_ip=args.node_ip or os.environ.get("NODE_IP", "") or addresses.node_ip_for(args.listen),
        listen_host=args.listen,
        port=args.port,
        metrics_host=args.metrics_listen,
        metrics_port=args.metrics_port,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        client_ca=args.client_ca,
        anonymous_auth=args.anonymous_auth,
        authentication_token_webhook=args.authentication_token_webhook,
        authorization_mode=args.authorization_mode,
        status_interval=args.status_interval,
        stats_interval=args.stats_interval,
        discovery_interval=args.discovery_interval,
        node_status_interval=args.node_status_interval,
        lease_duration=args.lease_duration,
        lease_renew_interval=args.lease_renew_interval,
        max_pods=args.max_pods,
        jobs_root=args.jobs_root,
        gpu_names=_gpu_names(parser, args.gpu_name),
        sif_gpu_flags=_sif_gpu_flags(parser, args.sif_gpu_flags),
        workers=args.workers,
        submissions=args.submissions,
        websockets_to_kubelet=args.websockets_to_kubelet,
        wlm_timeout=args.wlm_timeout,
        log_level=args.log_level,
        leader_elect=args.leader_elect,
        leader_lease_duration=args.leader_lease_duration,
        leader_renew_interval=args.leader_renew_interval,
        leader_retry_interval=args.leader_retry_interval,
    )


def _red_boxes(parser: argparse.ArgumentParser, given: list[str]) -> tuple[tuple[str, str], ...]:
    red_boxes: dict[str, str] = {}
    for entry in given:
        user, eq, path = entry.partition("=")
        if not eq or not user or not path or user == "root":
            parser.error(f"--red-box {entry!r}: expected USER=SOCKET, USER a Slurm user other than root")
        if user in red_boxes:
            parser.error(f"--red-box: user {user} is given twice")
        red_boxes[user] = path
    return tuple(red_boxes.items())


def _clusters(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[ClusterSettings, ...]:
    """``--cluster NAME=SOCKET`` entries, with ``--red-box NAME:USER=SOCKET`` for their tenants."""
    for flag, value in (("--cluster-name", args.cluster_name), ("--red-box-socket", args.red_box_socket)):
        if value is not None:
            parser.error(
                f"--cluster and {flag} exclude each other: each --cluster NAME=SOCKET names its"
                " cluster and its red-box's socket"
            )
    sockets: dict[str, str] = {}
    for entry in args.cluster:
        name, eq, path = entry.partition("=")
        if not eq or not path or not _CLUSTER_NAME.fullmatch(name):
            parser.error(f"--cluster {entry!r}: expected NAME=SOCKET, NAME letters, digits, '-' and '_'")
        if any(names.node_name(name, "") == names.node_name(known, "") for known in sockets):
            parser.error(f"--cluster: cluster {name} is given twice")
        sockets[name] = path
    tenants: dict[str, list[str]] = {name: [] for name in sockets}
    for entry in args.red_box:
        cluster, colon, rest = entry.partition(":")
        if not colon or cluster not in sockets:
            parser.error(
                f"--red-box {entry!r}: with --cluster, expected NAME:USER=SOCKET, NAME one of the"
                f" --cluster names ({', '.join(sockets)})"
            )
        tenants[cluster].append(rest)
    return tuple(
        ClusterSettings(name=name, red_box_socket=path, red_boxes=_red_boxes(parser, tenants[name]))
        for name, path in sockets.items()
    )


def _sif_gpu_flags(parser: argparse.ArgumentParser, given: str) -> tuple[str, ...]:
    try:
        return runtimes.check_gpu_flags(given.split())
    except InvalidInput as exc:
        parser.error(f"--sif-gpu-flags: {exc.message}")


def _gpu_names(parser: argparse.ArgumentParser, given: list[str]) -> tuple[tuple[str, str], ...]:
    out = []
    for item in given:
        resource, _, kind = item.partition("=")
        if not resource.strip() or "/" not in resource or not kind.strip() or ":" in kind:
            parser.error(f"--gpu-name wants RESOURCE=TYPE (nvidia.com/a100=a100), not {item!r}")
        if resource.strip() == gpus.ANY:
            parser.error(
                f"--gpu-name: {gpus.ANY} asks for any GPU; name a resource of one type, not {item!r}"
            )
        out.append((resource.strip(), kind.strip()))
    return tuple(out)


def _or_default(red_box_socket: str | None) -> str:
    return names.DEFAULT_RED_BOX_SOCKET if red_box_socket is None else red_box_socket
