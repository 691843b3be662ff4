"""kube-apiserver's requests, counted from its own /metrics, and kubectl run for a benchmark.

``requests_by_kind`` reads ``apiserver_request_total`` through ``kubectl get --raw /metrics`` and
adds it up by verb and resource (``PATCH pods/status``); two readings around a run, subtracted
(``between``), are the requests the run made.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def kubectl() -> str:
    """The kubectl dev/scripts/kube-local built (the real plane's own), else the one on PATH."""
    built = subprocess.run(
        [str(ROOT / "dev" / "scripts" / "kube-local"), "bin"], capture_output=True, text=True, check=False
    )
    path = Path(built.stdout.strip()) / "kubectl"
    return str(path) if built.returncode == 0 and path.is_file() else shutil.which("kubectl") or "kubectl"


async def run_kubectl(binary: str, kubeconfig: Path, *args: str, stdin: str = "") -> str:
    proc = await asyncio.create_subprocess_exec(
        binary, "--kubeconfig", str(kubeconfig), *args,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate(stdin.encode())
    if proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {err.decode()}")
    return out.decode()


_REQUEST = re.compile(r"^apiserver_request_total\{(.*)\} (\d+)$", re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')


async def requests_by_kind(binary: str, kubeconfig: Path) -> dict[str, int]:
    """kube-apiserver's requests so far (its /metrics ``apiserver_request_total``) by verb and resource."""
    text = await run_kubectl(binary, kubeconfig, "get", "--raw", "/metrics")
    counts: dict[str, int] = {}
    for labels, value in _REQUEST.findall(text):
        got = dict(_LABEL.findall(labels))
        kind = f"{got.get('verb')} {got.get('resource')}" + (
            f"/{got['subresource']}" if got.get("subresource") else ""
        )
        counts[kind] = counts.get(kind, 0) + int(value)
    return counts


def between(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The requests made between two readings, the most frequent first (kinds with none left out)."""
    made = {kind: n - before.get(kind, 0) for kind, n in after.items() if n - before.get(kind, 0) > 0}
    return dict(sorted(made.items(), key=lambda kv: -kv[1]))
