"""The WebSocket remote command protocol's rules: negotiation, channels, v5's close."""

from __future__ import annotations

from wlmvk.kubelet.api.exec.requests import Resize, StdinClosed, StdinData
from wlmvk.kubelet.api.exec.wschannels import V4, V5, Inbound, Refusal, frame, negotiate

KUBECTL = "v5.channel.k8s.io, v4.channel.k8s.io, v3.channel.k8s.io, v2.channel.k8s.io"


def test_the_clients_first_served_protocol_wins() -> None:
    assert negotiate([KUBECTL]) == V5
    assert negotiate(["v4.channel.k8s.io", "v5.channel.k8s.io"]) == V4
    assert negotiate(["v3.channel.k8s.io, v4.channel.k8s.io"]) == V4


def test_no_protocol_in_common_is_refused_before_the_upgrade() -> None:
    assert negotiate(["v3.channel.k8s.io"]) == Refusal(
        400,
        "unable to upgrade: the client offers the WebSocket subprotocols ['v3.channel.k8s.io'],"
        " the kubelet serves ['v5.channel.k8s.io', 'v4.channel.k8s.io']",
    )
    assert negotiate([]) == Refusal(
        400,
        "unable to upgrade: the client offers the WebSocket subprotocols [],"
        " the kubelet serves ['v5.channel.k8s.io', 'v4.channel.k8s.io']",
    )


def test_frames_carry_their_channel_first() -> None:
    assert frame(1, b"out") == b"\x01out"
    assert frame(3, b"{}") == b"\x03{}"


def test_inbound_v5_session() -> None:
    inbound = Inbound(V5)
    assert inbound.feed(b'\x04{"Width":80,"Height":24}') == [Resize(80, 24)]
    assert inbound.feed(b"\x00ls\n") == [StdinData(b"ls\n")]
    assert inbound.feed(b"\x00") == [], "an empty stdin message is nothing"
    assert inbound.feed(b"") == []
    assert inbound.feed(b"\x09junk") == [], "an unknown channel is ignored"
    assert inbound.feed(b"\xff\x00") == [StdinClosed()]
    assert inbound.feed(b"\x00late") == [], "nothing after the close of stdin"
    assert inbound.feed(b"\xff\x00") == []
    assert inbound.feed(b'\x04{"width":100,"height":30}') == [Resize(100, 30)]


def test_v4_has_no_close_channel() -> None:
    assert Inbound(V4).feed(b"\xff\x00") == []
