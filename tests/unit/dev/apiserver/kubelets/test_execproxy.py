"""The in-memory API server's pods/exec proxy: the kubelet's query and the kubelet's answer head."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp.test_utils import make_mocked_request

from wlmvk_dev.apiserver.kubelets.execproxy import _response_head, kubelet_query
from wlmvk_dev.apiserver.objects.errors import ApiError


def test_the_query_is_renamed_as_kube_apiserver_does() -> None:
    request = make_mocked_request(
        "GET",
        "/api/v1/namespaces/ns/pods/p/exec?command=sh&command=-c&command=echo%20a&container=main"
        "&stdin=true&stdout=true&stderr=false&tty=true",
    )
    assert kubelet_query(request) == "command=sh&command=-c&command=echo+a&input=1&output=1&tty=1"


async def head_of(raw: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    reader = asyncio.StreamReader()
    reader.feed_data(raw)
    reader.feed_eof()
    return await _response_head(reader)


async def test_a_switch_keeps_the_bytes_after_the_head() -> None:
    raw = (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n\x82\x02\x01x"
    )
    assert await head_of(raw) == (
        101,
        [
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Protocol", "v5.channel.k8s.io"),
        ],
        b"\x82\x02\x01x",
    )


async def test_a_refusal_keeps_its_body() -> None:
    raw = b"HTTP/1.1 404 Not Found\r\nContent-Length: 12\r\n\r\npod gone\n..extra"
    assert await head_of(raw) == (404, [("Content-Length", "12")], b"pod gone\n..e")


async def test_a_kubelet_that_hangs_up_is_an_internal_error() -> None:
    with pytest.raises(ApiError) as failed:
        await head_of(b"HTTP/1.1 101 Swit")
    assert failed.value.message == "the kubelet closed the connection before answering"
