"""``kubectl top`` of a running Slurm job, on both control planes.

A pod whose job spins in its script (no srun) shows CPU in ``kubectl top pod``
and on its node in ``kubectl top node``, from Slurm's own accounting (sstat
through red-box's JobUsage). On the real plane metrics-server v0.8.0
(dev/scripts/kube-local) scrapes the kubelet's /metrics/resource/<node>; on the
in-memory plane its stand-in reads /stats/summary. A finished job uses
nothing and has no metrics.

metrics-server is built only on request (``dev/scripts/kube-local build --metrics-server``), so
``kubectl top`` on the real plane is marked ``metrics_server`` (CI deselects it). What it
reads is proved on both planes without it: the kubelet's /stats/summary and
/metrics/resource, with the job in them, through the API server's node proxy (``kubectl get
--raw /api/v1/nodes/<node>/proxy/...``) to a kubelet on the host's address, as deployed
without --node-ip; kube-apiserver proxies to no loopback kubelet.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, unique
from tests.e2e.kubelet.test_api_access import client_context, get, sign
from tests.e2e.kubelet.test_kubelet import wait_phase
from tests.fixtures import prerequisites
from tests.fixtures.apiserver import RealApiServer, RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.node import addresses

SUBJECT = "the resource metrics API and the node proxy, as the API server serves them to kubectl top"
pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, pytest.mark.kube_any(subject=SUBJECT)]
TOP = pytest.mark.kube_any(subject=SUBJECT, real_marks=(pytest.mark.metrics_server,))
"""``kubectl top`` on both planes; on the real one it needs metrics-server."""

SPIN = "while :; do :; done"


def millicores(text: str) -> int:
    match = re.fullmatch(r"(\d+)(m?)", text)
    assert match, text
    return int(match.group(1)) * (1 if match.group(2) else 1000)


@TOP
async def test_kubectl_top_shows_a_spinning_jobs_cpu(stack: Stack) -> None:
    name, done = unique("spin"), unique("done")
    await stack.kube.create(PODS, job_pod(name, SPIN), namespace="default")
    await stack.kube.create(PODS, job_pod(done, "echo done"), namespace="default")
    try:
        await wait_phase(stack, name, "Running")
        await wait_phase(stack, done, "Succeeded")
        readings: list[int] = []

        async def spinning() -> bool:
            top = await stack.kubectl("top", "pod", name, "--no-headers")
            assert top.returncode == 0, top.stderr
            pod, cpu, memory = top.stdout.split()
            assert pod == name
            assert re.fullmatch(r"\d+Mi", memory), memory
            readings.append(millicores(cpu))
            return readings[-1] >= 100

        spinning.__name__ = f"kubectl top pod {name} >= 100m"
        await eventually(spinning, timeout=120, every=2)

        async def node_busy() -> bool:
            top = await stack.kubectl("top", "node", "--no-headers")
            assert top.returncode == 0, top.stderr
            rows = {line.split()[0]: line.split() for line in top.stdout.splitlines()}
            return millicores(rows["slurm-test-debug"][1]) >= 100

        node_busy.__name__ = "kubectl top node: slurm-test-debug >= 100m"
        await eventually(node_busy, timeout=60, every=2)

        listing = await stack.kubectl("top", "pod", "--no-headers")
        assert listing.returncode == 0, listing.stderr
        assert name in listing.stdout
        assert done not in listing.stdout, "a finished job uses nothing and has no metrics"
        missing = await stack.kubectl("top", "pod", done)
        assert missing.returncode != 0
        # metrics-server watches running pods only: a finished one is not known to it at all.
        assert missing.stderr == f'Error from server (NotFound): pods "{done}" not found\n'
        running = await stack.kubectl("top", "node", "slurm-test-cpu")
        assert running.returncode != 0
        assert (
            running.stderr
            == 'Error from server (NotFound): nodemetrics.metrics.k8s.io "slurm-test-cpu" not found\n'
        )

    finally:
        for pod in (name, done):
            await stack.kubectl("delete", "pod", pod, "--wait=false")


async def top_pod(stack: Stack, name: str) -> int | None:
    """The pod's CPU in millicores, None while metrics-server has none for it yet."""
    top = await stack.kubectl("top", "pod", name, "--no-headers")
    if top.returncode != 0:
        assert "not found" in top.stderr or "not available" in top.stderr, top.stderr
        return None
    pod, cpu, memory = top.stdout.split()
    assert pod == name
    assert re.fullmatch(r"\d+Mi", memory), memory
    return millicores(cpu)


@pytest.fixture
def signals() -> Iterator[Path]:
    """A directory the job (run as the job owner) can look into for the test's signal."""
    path = Path(tempfile.mkdtemp(prefix="wlmvk-top-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@TOP
async def test_kubectl_top_pod_follows_a_job_that_spins_harder(stack: Stack, signals: Path) -> None:
    """A job idles in short bursts, then spins without pause once the test says so: two readings
    of ``kubectl top pod``, both above zero, the second higher; its node in ``kubectl top node``."""
    go = signals / "spin"
    # The bursts run in the script's own shell: Slurm's jobacct_gather adds up the processes it
    # sees alive, so CPU spent in short-lived children is not counted.
    burst = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"
    script = f"while [ ! -e {go} ]; do {burst}; sleep 1; done; while :; do :; done"
    name = unique("rise")
    await stack.kube.create(PODS, job_pod(name, script), namespace="default")
    try:
        await wait_phase(stack, name, "Running")
        readings: list[int] = []

        async def measured() -> bool:
            cpu = await top_pod(stack, name)
            if cpu:
                readings.append(cpu)
            return bool(readings)

        measured.__name__ = f"kubectl top pod {name} > 0 while it idles"
        await eventually(measured, timeout=120, every=2)
        await asyncio.to_thread(go.touch)

        async def higher() -> bool:
            cpu = await top_pod(stack, name)
            if cpu:
                readings.append(cpu)
            return readings[-1] > readings[0]

        higher.__name__ = f"kubectl top pod {name} above its first reading once it spins"
        await eventually(higher, timeout=120, every=2)
        assert readings[0] > 0
        assert readings[-1] > readings[0]

        async def node_listed() -> bool:
            top = await stack.kubectl("top", "node", "--no-headers")
            rows = {line.split()[0]: line.split() for line in top.stdout.splitlines()}
            return "slurm-test-debug" in rows and millicores(rows["slurm-test-debug"][1]) > 0

        node_listed.__name__ = "kubectl top node lists slurm-test-debug above 0"
        await eventually(node_listed, timeout=60, every=2)
    finally:
        await stack.kubectl("delete", "pod", name, "--wait=false")


@pytest.mark.kube_real
async def test_resource_metrics_are_authorized_as_nodes_metrics(stack: Stack, tmp_path: Path) -> None:
    """The kubelet asks kube-apiserver (SubjectAccessReview) whether the caller may get
    nodes/metrics of the node in the path: a user granted it (as metrics-server's identity is)
    may, another user may not. Real plane only: the in-memory API server allows every review."""
    pki = stack.apiserver.real.ca.parent
    path = "/metrics/resource/slurm-test-debug"
    cert, key = await asyncio.to_thread(sign, pki, tmp_path, "nosy-user")
    assert await get(stack, path, client_context(cert, key)) == (
        403,
        "Forbidden (user=nosy-user, verb=get, resource=nodes, subresource(s)=[metrics])\n",
    )
    granted = await stack.kubectl("apply", "-f", "-", input=SCRAPER_RBAC)
    assert granted.returncode == 0, granted.stderr
    try:
        cert, key = await asyncio.to_thread(sign, pki, tmp_path, "test-scraper")
        status, text = await get(stack, path, client_context(cert, key))
        assert status == 200
        assert text.endswith("# TYPE resource_scrape_error gauge\nresource_scrape_error 0\n")
        assert "node_cpu_usage_seconds_total " in text
    finally:
        await stack.kubectl("delete", "-f", "-", "--wait=false", input=SCRAPER_RBAC)


SCRAPER_RBAC = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: test-scraper}
rules: [{apiGroups: [""], resources: ["nodes/metrics"], verbs: ["get"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: test-scraper}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: test-scraper}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: test-scraper}]
"""
"""What metrics-server's ClusterRole grants for scraping (dev/scripts/kube-local applies it only with
metrics-server), for a user of the test's own."""


HOST_IP = addresses.default_node_ip()
ROUTABLE = prerequisites.unless_installed(
    HOST_IP == addresses.LOOPBACK, "an IPv4 default route (the kubelet's address for the node proxy)"
)


@pytest.fixture
async def routable_stack(
    slurm: str,
    apiserver: RunningApiServer | RealApiServer,
    redbox_factory: Callable[..., RedBox],
    kubelet_factory: StartKubelet,
    kube: KubeClient,
) -> Stack:
    """The stack with its kubelet as deployed without --node-ip: listening on, and advertising as
    its nodes' InternalIP, the host's address on its default route (not loopback)."""
    box = redbox_factory(user=JOB_OWNER)
    kubeconfig = apiserver.kubeconfig_for("wlmvk-kubelet")
    kubelet = await kubelet_factory(
        kubeconfig=kubeconfig, red_box_socket=box.socket, node_ip=HOST_IP, listen_host=HOST_IP
    )
    return Stack(apiserver, box, kubelet, kube)


async def kubelet_path(stack: Stack, node: str, path: str) -> str:
    """``path`` of the node's kubelet as the API server's node proxy reaches it:
    ``kubectl get --raw /api/v1/nodes/<node>/proxy<path>``."""
    raw = await stack.kubectl("get", "--raw", f"/api/v1/nodes/{node}/proxy{path}")
    assert raw.returncode == 0, raw.stderr
    return raw.stdout


@ROUTABLE
async def test_the_kubelets_summary_and_resource_metrics_hold_a_running_job(routable_stack: Stack) -> None:
    """What ``kubectl top`` is made of, through the API server's node proxy to the kubelet at the
    host's address: the Summary API (the in-memory plane's metrics stand-in reads it) and
    /metrics/resource/<node> (metrics-server scrapes it) both hold the spinning job's pod."""
    stack = routable_stack
    name = unique("proxied")
    node = "slurm-test-debug"
    addresses_of = await stack.kubectl("get", "node", node, "-o", "jsonpath={.status.addresses}")
    assert json.loads(addresses_of.stdout) == [
        {"type": "InternalIP", "address": HOST_IP},
        {"type": "Hostname", "address": node},
    ]
    await stack.kube.create(PODS, job_pod(name, SPIN), namespace="default")
    try:
        await wait_phase(stack, name, "Running")

        async def summarized() -> dict[str, Any] | None:
            body = json.loads(await kubelet_path(stack, node, "/stats/summary"))
            pods = {p["podRef"]["name"]: p for p in body["pods"]}
            return body if name in pods else None

        summarized.__name__ = f"/stats/summary lists {name}"
        summary = await eventually(summarized, timeout=120, every=2)
        assert node in summary["node"]["nodeName"].split(",")
        (pod,) = [p for p in summary["pods"] if p["podRef"]["name"] == name]
        assert pod["podRef"]["namespace"] == "default"
        assert pod["memory"]["workingSetBytes"] > 0

        text = await kubelet_path(stack, node, f"/metrics/resource/{node}")
        assert text.endswith("# TYPE resource_scrape_error gauge\nresource_scrape_error 0\n")
        series = f'pod_cpu_usage_seconds_total{{namespace="default",pod="{name}"}} '
        assert len([line for line in text.splitlines() if line.startswith(series)]) == 1, text
    finally:
        await stack.kubectl("delete", "pod", name, "--wait=false")


async def test_the_node_proxy_of_an_unknown_node_is_not_found(stack: Stack) -> None:
    missing = await stack.kubectl("get", "--raw", "/api/v1/nodes/no-such-node/proxy/stats/summary")
    assert (missing.returncode, missing.stderr) == (
        1,
        'Error from server (NotFound): nodes "no-such-node" not found\n',
    )


@pytest.mark.kube_real
async def test_kube_apiserver_refuses_to_proxy_to_a_loopback_kubelet(stack: Stack) -> None:
    """kube-apiserver proxies only to a global unicast address (IsProxyableIP); every kubelet of
    this machine is on 127.0.0.1. The in-memory server, made for one machine, proxies to it."""
    loopback = await stack.kubectl("get", "--raw", "/api/v1/nodes/slurm-test-debug/proxy/stats/summary")
    refused = "Error from server (BadRequest): address not allowed\n"
    assert (loopback.returncode, loopback.stderr) == (1, refused)
