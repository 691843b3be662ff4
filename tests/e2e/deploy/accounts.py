"""kubectl as one of wlmvk's ServiceAccounts, with the account's own token (not impersonation)."""

from __future__ import annotations

import json
import os
import subprocess

from tests.fixtures.controlplane import RealKube


def as_account(kube: RealKube, account: str, *args: str, body: dict[str, object] | None = None) -> str:
    """kubectl as ServiceAccount ``wlmvk/<account>``, with its token: '' when admitted, else the refusal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(KUBECONFIG=str(kube.account_kubeconfig(account)), HOME=str(kube.workdir))
    argv = [str(kube.kubectl), *args]
    if body is not None:
        argv += ["-f", "-"]
    done = subprocess.run(
        argv,
        input=json.dumps(body) if body is not None else None,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return "" if done.returncode == 0 else done.stderr.strip()
