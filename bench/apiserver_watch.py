"""Benchmark: list+watch of 10,000 pods with 100 concurrent watchers against the in-memory API server.

The server runs as ``wlmvk dev apiserver`` in its own process (as the demo runs it); this
process creates the pods over HTTP, lists them, opens the watchers from the list's
resourceVersion, then patches pods and waits until every watcher has seen every change.
Prints creates/s, list time, patches/s and delivered watch events/s, and the fan-out
ratio (delivered events per second / writes per second). ``--in-process`` measures the
same through ``Store.watch`` (what the in-process controllers use) without HTTP. Usage:

    .venv/bin/python bench/apiserver_watch.py [--pods 10000] [--watchers 100] [--updates 2000] [--in-process]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from wlmvk_dev.apiserver.objects.resources import PODS
from wlmvk_dev.apiserver.storage.store import Store, Watch


def start_server(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from wlmvk.cli import run; run()",
            "dev",
            "apiserver",
            "--port",
            "0",
            "--no-controllers",
            "--history",
            "50000",
            "--log-level",
            "warning",
            "--kubeconfig",
            str(workdir / "kubeconfig"),
        ],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    url = line.decode().split()[2]
    return proc, url


async def bounded(n: int, concurrency: int, work: object) -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(i)

    async def worker() -> None:
        while not queue.empty():
            await work(queue.get_nowait())  # type: ignore[operator]

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def watcher(http: aiohttp.ClientSession, url: str, rv: str, want: int, done: list[float]) -> None:
    seen = 0
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "600"}
    async with http.get(f"{url}/api/v1/namespaces/default/pods", params=params) as resp:
        buffer = b""
        async for chunk in resp.content.iter_any():
            buffer += chunk
            seen += buffer.count(b"\n")
            buffer = buffer[buffer.rfind(b"\n") + 1 :]
            if seen >= want:
                break
    done.append(time.perf_counter())


async def in_process(args: argparse.Namespace) -> None:
    store = Store(history=50_000)
    t0 = time.perf_counter()
    for i in range(args.pods):
        store.create(
            PODS,
            {
                "metadata": {"name": f"p{i:05d}", "labels": {"app": "bench"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        )
    t_create = time.perf_counter() - t0
    t0 = time.perf_counter()
    listed = store.list(PODS, "default")
    t_list = time.perf_counter() - t0

    async def consume(w: Watch, done: list[float]) -> None:
        seen = 0
        async for _ in w:
            seen += 1
            if seen == args.updates:
                break
        done.append(time.perf_counter())

    done: list[float] = []
    watches = [
        store.watch(PODS, "default", resource_version=listed.resource_version) for _ in range(args.watchers)
    ]
    tasks = [asyncio.create_task(consume(w, done)) for w in watches]
    t0 = time.perf_counter()
    for i in range(args.updates):
        store.patch(PODS, f"p{i % args.pods:05d}", {"metadata": {"labels": {"round": str(i)}}})
        if i % 100 == 0:
            await asyncio.sleep(0)
    t_writes = time.perf_counter() - t0
    await asyncio.gather(*tasks)
    t_all = max(done) - t0
    report(args, t_create, t_list, len(json.dumps(listed.items)), t_writes, t_all, "in-process Store.watch")


def report(
    args: argparse.Namespace,
    t_create: float,
    t_list: float,
    size: int,
    t_writes: float,
    t_all: float,
    how: str,
) -> None:
    delivered = args.updates * args.watchers
    writes_per_s = args.updates / t_writes
    events_per_s = delivered / t_all
    print(f"[{how}]")
    print(f"pods created:        {args.pods} in {t_create:.2f}s  ({args.pods / t_create:,.0f} creates/s)")
    print(f"list of {args.pods} pods:  {t_list * 1000:.0f} ms ({size / 1e6:.1f} MB)")
    print(f"patches:             {args.updates} in {t_writes:.2f}s  ({writes_per_s:,.0f} writes/s)")
    print(
        f"watch events:        {delivered:,} to {args.watchers} watchers in {t_all:.2f}s  "
        f"({events_per_s:,.0f} events/s)"
    )
    print(f"fan-out ratio:       {events_per_s / writes_per_s:.1f} delivered events per write per second")


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pods", type=int, default=10_000)
    p.add_argument("--watchers", type=int, default=100)
    p.add_argument("--updates", type=int, default=2_000)
    p.add_argument("--in-process", action="store_true", help="measure Store.watch without HTTP")
    args = p.parse_args()
    if args.in_process:
        await in_process(args)
        return
    workdir = Path(tempfile.mkdtemp(prefix="apis-bench-", dir="/tmp"))
    proc, url = await asyncio.to_thread(start_server, workdir)
    try:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=None)
        ) as http:
            pods_url = f"{url}/api/v1/namespaces/default/pods"

            async def create(i: int) -> None:
                body = {
                    "metadata": {"name": f"p{i:05d}", "labels": {"app": "bench"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1"]}]},
                }
                async with http.post(pods_url, json=body) as r:
                    assert r.status == 201, await r.text()

            t0 = time.perf_counter()
            await bounded(args.pods, 32, create)
            t_create = time.perf_counter() - t0

            t0 = time.perf_counter()
            async with http.get(pods_url) as r:
                listed = json.loads(await r.read())
            t_list = time.perf_counter() - t0
            assert len(listed["items"]) == args.pods
            rv = listed["metadata"]["resourceVersion"]

            done: list[float] = []
            tasks = [
                asyncio.create_task(watcher(http, url, rv, args.updates, done)) for _ in range(args.watchers)
            ]
            await asyncio.sleep(1.0)

            async def update(i: int) -> None:
                name = f"p{i % args.pods:05d}"
                patch = {"metadata": {"labels": {"round": str(i)}}}
                headers = {"Content-Type": "application/merge-patch+json"}
                async with http.patch(f"{pods_url}/{name}", data=json.dumps(patch), headers=headers) as r:
                    assert r.status == 200, await r.text()

            t0 = time.perf_counter()
            await bounded(args.updates, 32, update)
            t_writes = time.perf_counter() - t0
            await asyncio.gather(*tasks)
            t_all = max(done) - t0
    finally:
        proc.terminate()
        proc.wait()

    report(
        args, t_create, t_list, len(json.dumps(listed)), t_writes, t_all, "HTTP, server in its own process"
    )


if __name__ == "__main__":
    asyncio.run(main())
