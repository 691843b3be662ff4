"""Helpers of the operator's end-to-end tests: CRDs, operator processes, waiting on status."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.fixtures import polling

ROOT = Path(__file__).resolve().parents[3]
WLMVK = str(Path(sys.executable).parent / "wlmvk")


async def apply_crds(apiserver: Any) -> None:
    for name in ("slurmjobs.yaml", "wlmjobs.yaml"):
        applied = await apiserver.kubectl("apply", "-f", str(ROOT / "manifests" / "crds" / name))
        assert applied.returncode == 0, applied.stderr


async def get_json(apiserver: Any, *args: str) -> dict[str, Any]:
    got = await apiserver.kubectl("get", *args, "-o", "json")
    if got.returncode != 0:
        return {}
    value: dict[str, Any] = json.loads(got.stdout)
    return value


async def status_of(apiserver: Any, name: str, kind: str = "slurmjob") -> dict[str, Any]:
    body = await get_json(apiserver, kind, name)
    return dict(body.get("status") or {})


async def eventually(probe: Callable[[], Awaitable[Any]], *, timeout: float = 60, what: str = "") -> Any:
    """Poll ``probe`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    return await polling.eventually(probe, timeout=timeout, every=0.3, what=what, tolerate=())


async def wait_status(
    apiserver: Any, name: str, wanted: set[str], *, kind: str = "slurmjob", timeout: float = 90
) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        status = await status_of(apiserver, name, kind)
        return status if status.get("status") in wanted else None

    try:
        result: dict[str, Any] = await eventually(probe, timeout=timeout, what=f"{kind} {name} in {wanted}")
    except AssertionError:
        await print_diagnostics(apiserver)
        raise
    return result


async def print_diagnostics(apiserver: Any) -> None:
    """What a person would look at when a job stays in one state: pods, events, processes."""
    for args in (("get", "pods", "-o", "wide"), ("get", "events"), ("describe", "pods")):
        shown = await apiserver.kubectl(*args)
        print(f"$ kubectl {' '.join(args)}\n{shown.stdout}{shown.stderr}")
    ps = await asyncio.create_subprocess_exec(
        "ps", "-eo", "pid,ppid,user,etimes,stat,wchan:20,args", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await ps.communicate()
    lines = out.decode(errors="replace").splitlines()
    print("$ ps (staging processes)\n" + "\n".join(line for line in lines if " stage " in line))


class OperatorProcess:
    """``wlmvk operator`` as a real process, so that it can be killed like a crashed pod."""

    def __init__(self, kubeconfig: Path, identity: str, *extra: str, log_dir: Path) -> None:
        self.argv = [
            WLMVK,
            "operator",
            "--kubeconfig",
            str(kubeconfig),
            "--identity",
            identity,
            "--lease-namespace",
            "default",
            "--lease-duration",
            "3",
            "--renew-interval",
            "0.5",
            "--resync",
            "5",
            "--log-level",
            "debug",
            *extra,
        ]
        self.log = log_dir / f"operator-{identity}.log"
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> OperatorProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "POD_", "WATCH_"))}
        with self.log.open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        return self

    async def stop(self, sig: int = signal.SIGTERM) -> int | None:
        if self.proc is None or self.proc.returncode is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return await asyncio.wait_for(self.proc.wait(), 20)
        except TimeoutError:
            self.proc.kill()
            return await self.proc.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
