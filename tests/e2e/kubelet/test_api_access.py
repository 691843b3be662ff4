"""Who may use the kubelet's HTTPS API (issue 14.2), on both control planes.

As the real kubelet: a caller proves who it is by a client certificate of
``--client-ca`` or by a bearer token the API server's TokenReview accepts
(anonymous access is off), and each request is authorized by a
SubjectAccessReview on ``nodes/<subresource>`` of the node concerned. The
in-memory API server allows every review and knows no token; the real one
enforces the RBAC of manifests/ (no wlmvk ServiceAccount may read a node's
proxy).
"""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from pathlib import Path

import aiohttp
import pytest
import trustme

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import job_pod, unique
from tests.fixtures.apiserver import RealApiServer
from wlmvk.kube.bodies import PODS

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.kubectl,
    pytest.mark.kube_any(subject="the API server's TokenReview and SubjectAccessReview"),
]


def client_context(cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if cert is not None:
        context.load_cert_chain(cert, key)
    return context


async def get(stack: Stack, path: str, context: ssl.SSLContext, token: str = "") -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = f"https://127.0.0.1:{stack.kubelet.port}{path}"
    async with aiohttp.ClientSession() as session, session.get(url, ssl=context, headers=headers) as reply:
        return reply.status, await reply.text()


async def running_pod(stack: Stack) -> str:
    name = unique("quiet")
    await stack.kube.create(PODS, job_pod(name, "echo hello; sleep 60"), namespace="default")
    return name


async def test_no_credentials_or_an_unknown_token_is_401(stack: Stack) -> None:
    name = await running_pod(stack)
    for path in ("/pods", f"/containerLogs/default/{name}/main", "/healthz", "/exec/default/x/main"):
        assert await get(stack, path, client_context()) == (401, "Unauthorized\n"), path
        assert await get(stack, path, client_context(), token="not-a-token") == (401, "Unauthorized\n")


async def test_a_certificate_of_another_ca_fails_the_handshake(stack: Stack, tmp_path: Path) -> None:
    stranger = trustme.CA().issue_cert("kube-apiserver-kubelet-client")
    stranger.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "stranger.pem"))
    with pytest.raises(aiohttp.ClientError):
        await get(stack, "/pods", client_context(tmp_path / "stranger.pem"))


async def test_the_api_servers_client_certificate_is_let_in(stack: Stack) -> None:
    name = await running_pod(stack)
    status, body = await get(stack, "/pods", client_context(*stack.apiserver.kubelet_client))
    assert status == 200
    assert name in body


NODE_PROXY_READER = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: node-proxy-reader, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: test-node-proxy-reader}
rules: [{apiGroups: [""], resources: ["nodes/proxy"], verbs: ["get"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: test-node-proxy-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: test-node-proxy-reader}
subjects: [{kind: ServiceAccount, name: node-proxy-reader, namespace: default}]
"""


@pytest.mark.kube_real  # the in-memory API server issues no tokens and allows every review
async def test_users_and_tokens_are_authorized_by_the_api_server(stack: Stack, tmp_path: Path) -> None:
    assert isinstance(stack.apiserver, RealApiServer)
    real = stack.apiserver.real
    name = await running_pod(stack)
    logs = f"/containerLogs/default/{name}/main"
    cert, key = sign(real.ca.parent, tmp_path, "nosy-user")
    assert await get(stack, logs, client_context(cert, key)) == (
        403,
        "Forbidden (user=nosy-user, verb=get, resource=nodes, subresource(s)=[proxy])\n",
    )
    operator = real.must("create", "token", "wlmvk-operator", "-n", "wlmvk").strip()
    assert await get(stack, "/pods", client_context(), token=operator) == (
        403,
        "Forbidden (user=system:serviceaccount:wlmvk:wlmvk-operator, verb=get, resource=nodes,"
        " subresource(s)=[pods proxy])\n",
    )
    applied = real.run_kubectl("apply", "-f", "-", input=NODE_PROXY_READER)
    assert applied.returncode == 0, applied.stderr
    try:
        reader = real.must("create", "token", "node-proxy-reader", "-n", "default").strip()
        for _ in range(240):
            status, text = await get(stack, logs, client_context(), token=reader)
            if status != 400 and (status, text) != (200, ""):
                break
            await asyncio.sleep(0.5)  # the job is pending (400) or has not written its line yet
        assert (status, text) == (200, "hello\n")
    finally:
        real.run_kubectl("delete", "-f", "-", "--wait=false", input=NODE_PROXY_READER)


def sign(pki: Path, out: Path, user: str) -> tuple[Path, Path]:
    """A client certificate for ``user`` signed by dev/scripts/kube-local's cluster CA."""
    key, csr, cert = out / f"{user}.key", out / f"{user}.csr", out / f"{user}.crt"
    request = ["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={user}"]
    subprocess.run([*request, "-keyout", str(key), "-out", str(csr)], check=True, capture_output=True)
    authority = ["-CA", str(pki / "ca.crt"), "-CAkey", str(pki / "ca.key"), "-CAserial", str(out / "ca.srl")]
    signing = ["openssl", "x509", "-req", "-in", str(csr), *authority, "-CAcreateserial", "-days", "1"]
    subprocess.run([*signing, "-out", str(cert)], check=True, capture_output=True)
    return cert, key
