"""The nodes' InternalIP without --node-ip: the host's address on its default route, as the
real kubelet's, from a routing table captured on the test machine (tests/fixtures/proc)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wlmvk.kubelet import flags
from wlmvk.kubelet.node import addresses

CAPTURED = Path(__file__).resolve().parents[3] / "fixtures" / "proc" / "net-route-eth0.txt"
HEADER = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"


def test_the_default_route_of_a_captured_table_goes_through_its_gateway() -> None:
    # eth0 192.0.2.2/24 via 192.0.2.1, beside a bridge's and the link's own routes.
    assert addresses.default_gateway(CAPTURED.read_text()) == "192.0.2.1"


def test_the_default_route_with_the_lowest_metric_wins() -> None:
    table = HEADER + "eth1\t00000000\t0101A8C0\t0003\t0\t0\t200\t00000000\t0\t0\t0\n"
    table += "eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
    assert addresses.default_gateway(table) == "192.0.2.1"


@pytest.mark.parametrize(
    "route",
    [
        "",  # no route at all
        "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n",  # the link's own, no default
        "eth0\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\t0\t0\t0\n",  # a default route that is down
        "tun0\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0\n",  # a default route without gateway
    ],
)
def test_no_default_route_through_a_gateway_gives_none(route: str) -> None:
    assert addresses.default_gateway(HEADER + route) is None


def test_a_host_without_a_default_route_advertises_loopback(tmp_path: Path) -> None:
    table = tmp_path / "route"
    table.write_text(HEADER)
    assert addresses.default_node_ip(table) == "127.0.0.1"
    assert addresses.default_node_ip(tmp_path / "absent") == "127.0.0.1"


def test_a_kubelet_listening_on_one_address_advertises_it(tmp_path: Path) -> None:
    assert addresses.node_ip_for("127.0.0.1", tmp_path / "absent") == "127.0.0.1"
    assert addresses.node_ip_for("10.1.2.3", tmp_path / "absent") == "10.1.2.3"
    assert addresses.node_ip_for("0.0.0.0", tmp_path / "absent") == "127.0.0.1"


def test_the_default_is_the_source_address_the_host_routes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """On this machine: what ``ip route get`` names as the source toward the default gateway."""
    monkeypatch.delenv("NODE_IP", raising=False)
    gateway = addresses.default_gateway(addresses.ROUTES.read_text())
    if gateway is None:
        pytest.skip("this host has no IPv4 default route")
    route = subprocess.run(["ip", "-4", "route", "get", gateway], capture_output=True, text=True, check=True)
    words = route.stdout.split()
    expected = words[words.index("src") + 1]
    assert expected != "127.0.0.1"
    assert flags.parse([]).node_ip == expected
    assert flags.parse(["--listen", "127.0.0.1"]).node_ip == "127.0.0.1"
