"""Benchmark: ``logs -f`` latency, from a line written by the Slurm job to the client receiving it.

A pod runs a real Slurm job that prints its clock (``date +%s.%N``) every 0.25 s; a client
follows ``/containerLogs/...?follow=true`` on the kubelet's HTTPS API (what the API server's
pods/log proxy calls). Each line's latency = receive time - the time printed in it (same host,
same clock). Prints p50/p95/max (target p95 < 1 s).

    .venv/bin/python bench/kubelet_logs_latency.py --lines 40
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

import aiohttp
from kubelet_stack import Stack, scancel_name_prefix, wait_until

from wlmvk.core import names
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.app import Kubelet
from wlmvk.kubelet.settings import Settings
from wlmvk_dev.apiserver.kubelets import kubeletclient


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=40)
    args = parser.parse_args()
    prefix = f"kl{uuid.uuid4().hex[:5]}"
    stack = Stack().start()
    latencies: list[float] = []
    # The client below stands where the API server's log proxy does: with a client certificate.
    credentials = kubeletclient.issue(Path(tempfile.mkdtemp(prefix="kl-pki-")))
    try:
        settings = replace(
            Settings(),
            kubeconfig=str(stack.kubeconfig),
            red_box_socket=stack.socket,
            cluster_name="bench",
            listen_host="127.0.0.1",
            port=0,
            metrics_port=-1,
            status_interval=1.0,
            client_ca=str(credentials.ca),
        )
        kubelet = Kubelet(settings)
        await kubelet.start()
        kube = await KubeClient.connect(str(stack.kubeconfig))
        script = f"sleep 1; for i in $(seq 1 {args.lines}); do date +%s.%N; sleep 0.25; done"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": prefix},
            "spec": {
                "nodeName": names.node_name("bench", "debug"),
                "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", script]}],
            },
        }
        await kube.create(PODS, pod, namespace="default")

        async def running() -> bool:
            current = await kube.get(PODS, prefix, namespace="default")
            return bool(current.get("status", {}).get("phase") == "Running")

        await wait_until(running, timeout=120, every=0.2)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.load_cert_chain(credentials.cert, credentials.key)
        url = f"https://127.0.0.1:{kubelet.port}/containerLogs/default/{prefix}/main?follow=true"
        async with aiohttp.ClientSession() as session, session.get(url, ssl=context) as response:
            async for raw in response.content:
                received = time.time()
                try:
                    latencies.append(received - float(raw.strip()))
                except ValueError:
                    continue
        await kube.close()
        await kubelet.close()
    finally:
        scancel_name_prefix(prefix)
        stack.close()
    # Lines written before the client connected arrive at once with a large "latency": skip them.
    fresh = [value for value in latencies if value < 30][2:]
    fresh.sort()
    p95 = fresh[max(0, int(len(fresh) * 0.95) - 1)]
    print(f"lines followed: {len(fresh)}")
    print(
        f"latency p50 {statistics.median(fresh) * 1000:6.0f} ms,"
        f" p95 {p95 * 1000:6.0f} ms, max {fresh[-1] * 1000:6.0f} ms"
    )
    print(f"p95 / 1 s target: {p95:.2f}x ({'met' if p95 < 1 else 'NOT met'})")


if __name__ == "__main__":
    asyncio.run(main())
