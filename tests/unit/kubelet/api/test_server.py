"""The kubelet HTTPS API: TLS (self-signed, or client certificates against a CA), 501s, error codes."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import trustme
from aiohttp import web

from wlmvk.core.errors import NotFound, Unavailable
from wlmvk.kube import tls
from wlmvk.kube.bodies import TOKEN_REVIEWS, Body, Resource
from wlmvk.kubelet.api import server
from wlmvk.kubelet.api.auth.gate import AuthSettings, Gate, Refusal, Request
from wlmvk.kubelet.api.logs import LogOptions


async def logs(namespace: str, pod: str, container: str, options: LogOptions) -> AsyncIterator[bytes]:
    if pod == "missing":
        raise NotFound(f'pod "{pod}" not found')
    if pod == "down":
        raise Unavailable("red-box unreachable")

    async def stream() -> AsyncIterator[bytes]:
        yield f"{namespace}/{pod}/{container} tail={options.tail_lines}\n".encode()

    return stream()


async def serve(
    context: ssl.SSLContext, handlers: server.Handlers, *, gate: Gate | None = None
) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(server.kubelet_app(handlers, gate=gate))
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


class Reviews:
    """The API server's side of the reviews: known tokens, and the (user, subresource, node) allowed."""

    def __init__(self, tokens: dict[str, str], allowed: set[tuple[str, str, str]]) -> None:
        self.tokens = tokens
        self.allowed = allowed
        self.asked: list[tuple[str, ...]] = []

    async def create(self, resource: Resource, body: Body) -> Body:
        if resource == TOKEN_REVIEWS:
            token = body["spec"]["token"]
            self.asked.append(("token", token))
            if token not in self.tokens:
                return {**body, "status": {"authenticated": False}}
            user = {"username": self.tokens[token], "groups": ["system:serviceaccounts"]}
            return {**body, "status": {"authenticated": True, "user": user}}
        spec = body["spec"]
        attrs = spec["resourceAttributes"]
        assert (attrs["resource"], attrs["version"], attrs["group"], attrs["verb"]) == (
            "nodes",
            "v1",
            "",
            "get",
        )
        asked = (spec["user"], attrs["subresource"], attrs["name"])
        self.asked.append(asked)
        return {**body, "status": {"allowed": asked in self.allowed}}


async def test_requests_are_authenticated_then_authorized_per_node(ca: trustme.CA, tmp_path: Path) -> None:
    server_cert = ca.issue_cert("127.0.0.1", "localhost")
    cert, key, ca_file = tmp_path / "s.pem", tmp_path / "s.key", tmp_path / "ca.pem"
    server_cert.cert_chain_pems[0].write_to_path(str(cert))
    server_cert.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    context = tls.server_context(cert=str(cert), key=str(key), client_ca=str(ca_file), names=[], addresses=[])
    reviews = Reviews(
        tokens={"t-reader": "sa-reader", "t-half": "sa-half"},
        allowed={
            ("apiserver", "proxy", "node-a"),
            ("sa-reader", "pods", "node-a"),
            ("sa-reader", "proxy", "node-b"),
            ("sa-half", "proxy", "node-a"),
        },
    )

    def nodes_for(path: str) -> list[str]:
        return ["node-a"] if path.startswith("/containerLogs/ns/p/") else ["node-a", "node-b"]

    gate = Gate(AuthSettings(), create=reviews.create, nodes_for=nodes_for)
    handlers = server.Handlers(logs=logs, pods=lambda: [], healthy=lambda: True)
    runner, port = await serve(context, handlers, gate=gate)
    base = f"https://127.0.0.1:{port}"

    def client(name: str | None) -> ssl.SSLContext:
        made = ssl.create_default_context()
        ca.configure_trust(made)
        if name is not None:
            ca.issue_cert(name, common_name=name).configure_cert(made)
        return made

    async def get(path: str, context: ssl.SSLContext, token: str = "") -> tuple[int, str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            aiohttp.ClientSession() as session,
            session.get(base + path, ssl=context, headers=headers) as r,
        ):
            return r.status, await r.text()

    try:
        assert await get("/healthz", client(None)) == (401, "Unauthorized\n")
        assert await get("/healthz", client(None), token="t-unknown") == (401, "Unauthorized\n")
        assert await get("/containerLogs/ns/p/c", client("apiserver")) == (200, "ns/p/c tail=None\n")
        assert await get("/containerLogs/ns/p/c", client("nosy")) == (
            403,
            "Forbidden (user=nosy, verb=get, resource=nodes, subresource(s)=[proxy])\n",
        )
        # /pods answers for every node: pods (or proxy) on each of them is needed.
        assert await get("/pods", client(None), token="t-reader") == (200, json.dumps(POD_LIST))
        assert await get("/pods", client(None), token="t-half") == (
            403,
            "Forbidden (user=sa-half, verb=get, resource=nodes, subresource(s)=[pods proxy])\n",
        )
        asked = len(reviews.asked)
        assert await get("/pods", client(None), token="t-reader") == (200, json.dumps(POD_LIST))
        assert len(reviews.asked) == asked, "a token and an allowed access are not asked again at once"
        stranger = client(None)
        trustme.CA().issue_cert("apiserver", common_name="apiserver").configure_cert(stranger)
        with pytest.raises(aiohttp.ClientError):  # another CA's certificate: refused at the handshake
            await get("/healthz", stranger)
    finally:
        await runner.cleanup()


POD_LIST = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}


async def test_anonymous_requests_when_allowed_are_still_authorized() -> None:
    reviews = Reviews(tokens={}, allowed={("system:anonymous", "healthz", "node-a")})
    gate = Gate(AuthSettings(anonymous=True), create=reviews.create, nodes_for=lambda _: ["node-a"])
    anonymous = Request(peercert=None, authorization="", method="GET", path="/healthz")
    assert await gate.check(anonymous) is None
    refused = await gate.check(Request(peercert=None, authorization="", method="GET", path="/pods"))
    assert refused == Refusal(
        403, "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[pods proxy])"
    )


async def test_one_review_serves_every_pod_of_a_node() -> None:
    """The API server's execs into two pods and a log of a third, on one node: one review."""
    reviews = Reviews(tokens={}, allowed={("apiserver", "proxy", "node-a")})
    gate = Gate(AuthSettings(), create=reviews.create, nodes_for=lambda _: ["node-a"])
    peercert = {"subject": ((("commonName", "apiserver"),),)}
    for path in ("/exec/ns/p1/c", "/exec/ns/p2/c", "/containerLogs/ns/p3/c"):
        assert await gate.check(Request(peercert=peercert, authorization="", method="GET", path=path)) is None
    assert reviews.asked == [("apiserver", "proxy", "node-a")]
