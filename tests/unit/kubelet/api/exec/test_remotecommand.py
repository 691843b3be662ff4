"""The kubelet's remote command rules over SPDY: negotiation, streams, status, resizes."""

from __future__ import annotations

import json

import pytest

from wlmvk.kubelet.api.exec import remotecommand as rc
from wlmvk.kubelet.api.exec.requests import ExecRequest, Resize, exit_status

APISERVER_OFFER = [
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
]


def _request(
    *, stdin: bool = False, stdout: bool = True, stderr: bool = True, tty: bool = False
) -> ExecRequest:
    return ExecRequest("ns", "p", "c", ("true",), stdin=stdin, stdout=stdout, stderr=stderr, tty=tty)


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (APISERVER_OFFER, rc.V4),  # v5 is WebSocket-only: the kubelet answers v4 to the apiserver
        (["v5.channel.k8s.io, v4.channel.k8s.io"], rc.V4),
        ([" v3.channel.k8s.io ,v4.channel.k8s.io"], rc.V3),  # the client's order wins
        (["v2.channel.k8s.io"], rc.V2),
        (["channel.k8s.io"], rc.V1),
        (["nope", "v4.channel.k8s.io"], rc.V4),
    ],
)
def test_negotiation_picks_the_clients_first_served_version(offered: list[str], chosen: str) -> None:
    assert rc.negotiate(offered) == chosen


def test_no_version_offered_is_a_bad_request() -> None:
    assert rc.negotiate([]) == rc.Refusal(
        400, "unable to upgrade: header X-Stream-Protocol-Version names no protocol"
    )
    assert rc.negotiate([" , "]) == rc.negotiate([])


def test_no_common_version_is_forbidden_with_the_served_list() -> None:
    assert rc.negotiate(["v5.channel.k8s.io"]) == rc.Refusal(
        403,
        "unable to upgrade: unable to negotiate protocol: client supports ['v5.channel.k8s.io'],"
        " server accepts ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io']",
        tuple(("X-Accepted-Stream-Protocol-Versions", version) for version in rc.SERVED),
    )


@pytest.mark.parametrize(
    ("version", "request_", "streams"),
    [
        (rc.V4, _request(), {"error", "stdout", "stderr"}),
        (rc.V4, _request(stdin=True, stderr=False), {"error", "stdin", "stdout"}),
        (
            rc.V4,
            _request(stdin=True, tty=True),
            {"error", "stdin", "stdout", "resize"},
        ),  # a tty has no stderr
        (rc.V3, _request(stdin=True, tty=True), {"error", "stdin", "stdout", "resize"}),
        (rc.V2, _request(stdin=True, tty=True), {"error", "stdin", "stdout"}),  # resizing came with v3
        (rc.V1, _request(stdout=False, stdin=True), {"error", "stdin", "stderr"}),
    ],
)
def test_expected_streams(version: str, request_: ExecRequest, streams: set[str]) -> None:
    assert rc.expected_streams(version, request_) == streams


def test_v4_status_is_the_json_status_success_included() -> None:
    assert json.loads(rc.status_payload(rc.V4, exit_status(0))) == {"metadata": {}, "status": "Success"}
    failure = json.loads(rc.status_payload(rc.V4, exit_status(3)))
    assert failure["reason"] == "NonZeroExitCode"
    assert failure["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}


@pytest.mark.parametrize("version", [rc.V3, rc.V2])
def test_older_versions_write_only_a_failures_message(version: str) -> None:
    assert rc.status_payload(version, exit_status(0)) == b""
    assert rc.status_payload(version, exit_status(None, "job 7 is not running")) == b"job 7 is not running"


def test_v1_writes_nothing_and_drops_its_error_stream() -> None:
    assert rc.status_payload(rc.V1, exit_status(None, "lost")) == b""
    assert not rc.error_stream_kept(rc.V1)
    assert all(rc.error_stream_kept(version) for version in (rc.V4, rc.V3, rc.V2))


def test_resizes_as_client_go_writes_them() -> None:
    decoder = rc.ResizeDecoder()
    assert decoder.feed(b'{"Width":80,"Height":24}\n{"Width":100,"Height":30}\n') == [
        Resize(width=80, height=24),
        Resize(width=100, height=30),
    ]


def test_a_resize_cut_across_frames_waits_for_its_end() -> None:
    decoder = rc.ResizeDecoder()
    assert decoder.feed(b'{"Width":8') == []
    assert decoder.feed(b'0,"Height":24}{"width":1') == [Resize(width=80, height=24)]
    assert decoder.feed(b',"HEIGHT":2}') == [Resize(width=1, height=2)]


def test_missing_fields_are_zero_and_unknown_ones_ignored() -> None:
    assert rc.ResizeDecoder().feed(b'{"Height":5,"Colour":"red"}') == [Resize(width=0, height=5)]


@pytest.mark.parametrize(
    "bad",
    [b"[80,24]", b'{"Width":-1,"Height":2}', b'{"Width":65536}', b'{"Width":"80"}', b"}{", b'{"Width":true}'],
)
def test_decoding_stops_at_the_first_value_that_is_not_a_size(bad: bytes) -> None:
    decoder = rc.ResizeDecoder()
    assert decoder.feed(b'{"Width":1,"Height":1}' + bad) == [Resize(width=1, height=1)]
    assert decoder.feed(b'{"Width":2,"Height":2}') == []
