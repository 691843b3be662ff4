"""The kubelet HTTPS API: TLS (self-signed, or client certificates against a CA), 501s, error codes."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import trustme
from aiohttp import web

from wlmvk.core.errors import NotFound, Unavailable
from wlmvk.kube import tls
from wlmvk.kubelet import server
from wlmvk.kubelet.logs import LogOptions


async def logs(namespace: str, pod: str, container: str, options: LogOptions) -> AsyncIterator[bytes]:
    if pod == "missing":
        raise NotFound(f'pod "{pod}" not found')
    if pod == "down":
        raise Unavailable("red-box unreachable")

    async def stream() -> AsyncIterator[bytes]:
        yield f"{namespace}/{pod}/{container} tail={options.tail_lines}\n".encode()

    return stream()


async def serve(
    context: ssl.SSLContext, handlers: server.Handlers, *, require_client_cert: bool = False
) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(server.kubelet_app(handlers, require_client_cert=require_client_cert))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    return runner, port


def insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def test_self_signed_server_answers_and_maps_errors(tmp_path: Path) -> None:
    context = tls.server_context(cert="", key="", client_ca="", names=["localhost"], addresses=["127.0.0.1"])
    runner, port = await serve(context, server.Handlers(logs=logs, pods=lambda: [], healthy=lambda: True))
    base = f"https://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/containerLogs/ns/p/c?tailLines=3", ssl=insecure()) as r:
                assert (r.status, await r.text()) == (200, "ns/p/c tail=3\n")
            async with session.get(f"{base}/containerLogs/ns/missing/c", ssl=insecure()) as r:
                assert r.status == 404
            async with session.get(f"{base}/containerLogs/ns/down/c", ssl=insecure()) as r:
                assert r.status == 503
            async with session.get(f"{base}/containerLogs/ns/p/c?tailLines=oops", ssl=insecure()) as r:
                assert r.status == 400
            for path in ("exec/ns/p/c", "attach/ns/p/c", "portForward/ns/p", "run/ns/p/c"):
                async with session.post(f"{base}/{path}", ssl=insecure()) as r:
                    assert r.status == 501
                    assert "not supported" in await r.text()
            async with session.get(f"{base}/healthz", ssl=insecure()) as r:
                assert r.status == 200
            async with session.get(f"{base}/pods", ssl=insecure()) as r:
                assert (await r.json())["kind"] == "PodList"
    finally:
        await runner.cleanup()


async def test_missing_handlers_answer_501() -> None:
    context = tls.server_context(cert="", key="", client_ca="", names=["localhost"], addresses=["127.0.0.1"])
    runner, port = await serve(context, server.Handlers())
    try:
        url = f"https://127.0.0.1:{port}/containerLogs/a/b/c"
        async with aiohttp.ClientSession() as session, session.get(url, ssl=insecure()) as r:
            assert r.status == 501
    finally:
        await runner.cleanup()


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


async def test_client_certificates_are_required_with_a_client_ca(ca: trustme.CA, tmp_path: Path) -> None:
    server_cert = ca.issue_cert("127.0.0.1", "localhost")
    cert, key, ca_file = tmp_path / "s.pem", tmp_path / "s.key", tmp_path / "ca.pem"
    server_cert.cert_chain_pems[0].write_to_path(str(cert))
    server_cert.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    context = tls.server_context(cert=str(cert), key=str(key), client_ca=str(ca_file), names=[], addresses=[])
    runner, port = await serve(context, server.Handlers(healthy=lambda: True), require_client_cert=True)
    url = f"https://127.0.0.1:{port}/healthz"
    try:
        anonymous = ssl.create_default_context()
        ca.configure_trust(anonymous)
        async with aiohttp.ClientSession() as session, session.get(url, ssl=anonymous) as r:
            assert r.status == 401  # as a kubelet with anonymous auth off
            assert "client certificate" in await r.text()
        stranger = ssl.create_default_context()
        ca.configure_trust(stranger)
        trustme.CA().issue_cert("someone").configure_cert(stranger)
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientError):  # another CA's certificate: refused at the handshake
                async with session.get(url, ssl=stranger) as r:
                    await r.read()
        with_cert = ssl.create_default_context()
        ca.configure_trust(with_cert)
        ca.issue_cert("apiserver-client").configure_cert(with_cert)
        async with aiohttp.ClientSession() as session, session.get(url, ssl=with_cert) as r:
            assert r.status == 200
    finally:
        await runner.cleanup()
