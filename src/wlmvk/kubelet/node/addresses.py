"""The address the nodes advertise (their InternalIP) when ``--node-ip`` is not given.

The real kubelet, without ``--node-ip``, advertises the host's address on the interface of
its default route (k8s.io/apimachinery's ``ChooseHostInterface``): an address the API server
can reach. kube-apiserver proxies to a node (``nodes/<name>/proxy``, logs, exec) only at such
an address; it refuses loopback and link-local ones ("address not allowed"). wlmvk does the
same: the default route's gateway from the kernel's routing table, then the source address
the kernel chooses toward it (a UDP socket connected to it: no packet is sent). A host
without an IPv4 default route gets 127.0.0.1, which only an API server on the same host can
reach. A kubelet that listens on one address (``--listen``) advertises that one: it is not
reached at any other.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

LOOPBACK = "127.0.0.1"
ROUTES = Path("/proc/net/route")
_RTF_UP, _RTF_GATEWAY = 0x1, 0x2
_ANY = frozenset({"", "0.0.0.0", "::"})


def default_gateway(table: str) -> str | None:
    """The gateway of the default route with the lowest metric in a ``/proc/net/route`` table
    (its columns: Iface Destination Gateway Flags RefCnt Use Metric Mask ..., addresses in the
    kernel's byte order), or None when no default route goes through a gateway."""
    best: tuple[int, str] | None = None
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        destination, gateway, flags, metric, mask = fields[1], fields[2], fields[3], fields[6], fields[7]
        if int(destination, 16) or int(mask, 16):
            continue
        if int(flags, 16) & (_RTF_UP | _RTF_GATEWAY) != _RTF_UP | _RTF_GATEWAY:
            continue
        address = socket.inet_ntoa(struct.pack("<I", int(gateway, 16)))
        if best is None or int(metric) < best[0]:
            best = (int(metric), address)
    return best[1] if best else None


def source_address(gateway: str) -> str:
    """The address the kernel sends from toward ``gateway`` (a route lookup; nothing is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((gateway, 9))
        return str(probe.getsockname()[0])


def default_node_ip(routes: Path = ROUTES) -> str:
    """The host's address on its default route, else 127.0.0.1 (see the module's text)."""
    try:
        gateway = default_gateway(routes.read_text())
        return source_address(gateway) if gateway else LOOPBACK
    except OSError:
        return LOOPBACK


def node_ip_for(listen: str, routes: Path = ROUTES) -> str:
    """The InternalIP of a kubelet listening on ``listen``: that address, unless it is a wildcard."""
    return listen if listen not in _ANY else default_node_ip(routes)
