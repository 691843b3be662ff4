"""The kubelet's HTTPS API as a stranger sees it: TLS only; with --client-ca no certificate gets
401 and one from another CA fails the handshake; /metrics is on its own port; and bad log parameters get a
clear 4xx (or a bounded answer), never a crash. ``wlmvk kubelet`` runs as a subprocess."""

from __future__ import annotations

import asyncio
import os
import ssl
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
import trustme

from tests.faults import churn
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import free_port
from tests.fixtures.redbox import RedBox
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient

pytestmark = [pytest.mark.slurm]


@dataclass
class Secured:
    port: int
    metrics_port: int
    ca: trustme.CA
    kube: KubeClient
    process: asyncio.subprocess.Process

    def client_context(self, *, cert: bool = True, other_ca: bool = False) -> ssl.SSLContext:
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        if cert:
            issuer = trustme.CA() if other_ca else self.ca
            user = "kube-apiserver-client"
            issuer.issue_cert(user, common_name=user).configure_cert(context)
        return context


@pytest.fixture
async def secured(
    slurm: str, apiserver: RunningApiServer, redbox_factory: Callable[..., RedBox]
) -> AsyncIterator[Secured]:
    box = redbox_factory()
    scratch = Path(tempfile.mkdtemp(prefix="kapi-", dir="/tmp"))
    ca = trustme.CA()
    served = ca.issue_cert("127.0.0.1", "localhost")
    served.cert_chain_pems[0].write_to_path(str(scratch / "tls.crt"))
    served.private_key_pem.write_to_path(str(scratch / "tls.key"))
    ca.cert_pem.write_to_path(str(scratch / "ca.crt"))
    port, metrics_port = free_port(), free_port()
    argv = [
        sys.executable, "-c", "import sys; from wlmvk.cli import main; sys.exit(main(sys.argv[1:]))",
        "kubelet", "--kubeconfig", str(apiserver.kubeconfig), "--red-box-socket", box.socket,
        "--cluster-name", churn.CLUSTER, "--listen", "127.0.0.1", "--port", str(port),
        "--metrics-listen", "127.0.0.1", "--metrics-port", str(metrics_port),
        "--tls-cert", str(scratch / "tls.crt"), "--tls-key", str(scratch / "tls.key"),
        "--client-ca", str(scratch / "ca.crt"), "--status-interval", "1", "--jobs-root", "pods",
    ]  # fmt: skip
    with (scratch / "kubelet.log").open("wb") as sink:
        process = await asyncio.create_subprocess_exec(*argv, stdout=sink, stderr=sink, env=dict(os.environ))
    kube = await KubeClient.connect(str(apiserver.kubeconfig))
    try:
        assert await churn.wait_for(lambda: churn.node_ready(kube), 60), (scratch / "kubelet.log").read_text()
        yield Secured(port, metrics_port, ca, kube, process)
    finally:
        process.terminate()
        await process.wait()
        await kube.close()


async def _get(url: str, context: ssl.SSLContext | bool) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url, ssl=context) as reply:
        return reply.status, (await reply.content.read(1 << 20)).decode(errors="replace")


async def test_tls_only_client_certificates_required_metrics_apart(secured: Secured) -> None:
    base = f"https://127.0.0.1:{secured.port}"
    assert await _get(f"{base}/healthz", secured.client_context()) == (200, "ok")
    anonymous = secured.client_context(cert=False)
    for path in ("/healthz", "/pods", "/containerLogs/default/x/main", "/exec/default/x/main"):
        status, text = await _get(f"{base}{path}", anonymous)
        assert (status, text) == (401, "Unauthorized\n"), path  # as a kubelet with anonymous auth off
    with pytest.raises(aiohttp.ClientError):  # a certificate from another CA fails the handshake
        await _get(f"{base}/healthz", secured.client_context(other_ca=True))
    with pytest.raises(aiohttp.ClientError):
        await _get(f"http://127.0.0.1:{secured.port}/healthz", False)  # plain HTTP on the TLS port
    status, text = await _get(f"http://127.0.0.1:{secured.metrics_port}/metrics", False)
    assert status == 200
    assert "wlmvk" in text
    status, _ = await _get(f"{base}/metrics", secured.client_context())
    assert status == 404
    assert secured.process.returncode is None


BAD_PARAMETERS = [
    ("tailLines=-1", {400}),
    ("tailLines=abc", {400}),
    ("tailLines=99999999999999999999999", {200, 400}),
    ("limitBytes=0", {400}),
    ("limitBytes=-5", {400}),
    ("limitBytes=1e9", {400}),
    ("sinceSeconds=-3", {400}),
    ("sinceSeconds=abc", {400}),
    ("sinceTime=yesterday", {400}),
    ("sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", {200, 400}),
    ("follow=maybe", {200, 400}),
    ("timestamps=%00", {200, 400}),
]


async def test_bad_log_parameters_are_clear_errors(secured: Secured) -> None:
    name = f"logs-{os.urandom(3).hex()}"
    script = (
        "#!/bin/sh\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=10M\nfor i in 1 2 3; do echo line $i; done\n"
    )
    body = churn.pod_body(name, script)
    await secured.kube.create(PODS, body, namespace="default")

    async def done() -> bool:
        pod = await secured.kube.get(PODS, name, namespace="default")
        return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")

    try:
        assert await churn.wait_for(done, 120)
        base = f"https://127.0.0.1:{secured.port}/containerLogs/default/{name}/main"
        context = secured.client_context()
        assert await _get(base, context) == (200, "line 1\nline 2\nline 3\n")
        answers = {query: await _get(f"{base}?{query}", context) for query, _ in BAD_PARAMETERS}
        wrong = {
            q: a
            for (q, allowed), a in zip(BAD_PARAMETERS, answers.values(), strict=True)
            if a[0] not in allowed
        }
        assert wrong == {}
        assert all(len(text) < 4096 for _, text in answers.values())
        assert (await _get(f"{base}?limitBytes=7", context)) == (200, "line 1\n")
        status, _ = await _get(
            f"https://127.0.0.1:{secured.port}/containerLogs/default/{name}/other", context
        )
        assert status == 404
        status, _ = await _get(f"https://127.0.0.1:{secured.port}/containerLogs/default/nope/main", context)
        assert status == 404
        assert secured.process.returncode is None
    finally:
        await secured.kube.delete(PODS, name, namespace="default")
