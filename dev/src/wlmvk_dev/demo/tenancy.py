"""The demo's two tenants (``wlmvk dev up --tenants``; docs/tenancy.md).

On a Slurm of the demo's own that enforces associations (``slurm_variables``: the shared
local Slurm keeps its mode), as a site's admin would: two QoS, two accounts and their users'
associations (``sacctmgr``), one red-box per tenant user (run as that user, with the tenant's
allow-lists, its socket in a directory of its own), the second cluster's kubelet told where
each is (``--red-box USER=SOCKET``), two SlurmTenants mapping two namespaces. Then one pod in
each namespace, and what ``sacct`` says of each job. The two Unix users are the demo's own,
made at ``up`` and removed at ``down`` (``tenantusers``). Everything made here is removed at the
end; the red-boxes and the Slurm stop with the demo.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wlmvk.core import names
from wlmvk_dev import localslurm
from wlmvk_dev.demo.clusters import CLUSTERS, SOCKET_DIR
from wlmvk_dev.demo.progress import Progress
from wlmvk_dev.tenants import ENFORCE, Tenant, associate, sacctmgr, slurmtenant

Body = dict[str, Any]
CLUSTER = CLUSTERS[1]
"""The kubelet cluster the tenants run on: its kubelet is a process of the demo on both planes."""
PARTITION = "cpu"
SACCT_FIELDS = "JobID,User,Account,QOS,Partition"
SLURM_CLUSTER = "demotenants"
OWNER_ACCOUNT = "examples"
"""The job owner's account on the demo's enforcing Slurm, for the examples (no tenant's)."""


def slurm_variables() -> dict[str, str]:
    """The demo's own enforcing Slurm: beside the shared one (its base and ports moved by 50)."""
    shared = os.environ.get("WLMVK_SLURM_BASE") or "/var/tmp/wlmvk-local-slurm"
    port = int(os.environ.get("WLMVK_SLURM_CTLD_PORT") or 6917) + 50
    return localslurm.instance(Path(f"{shared}-demo-tenants"), port, SLURM_CLUSTER, enforce=ENFORCE)


def tenants(users: tuple[str, str]) -> tuple[Tenant, Tenant]:
    """Two tenants, each its user (``tenantusers``), account and QoS."""
    return (
        Tenant("demo-team-a", "team-a", users[0], "physics", "qos-phys"),
        Tenant("demo-team-b", "team-b", users[1], "chemistry", "qos-chem"),
    )


def socket_of(user: str) -> Path:
    """Each tenant user's red-box socket, alone in a directory of its own."""
    return SOCKET_DIR / f"tenant-{user}" / "red-box.sock"


def red_box_argv(tenant: Tenant, wlmvk: str) -> list[str]:
    """The tenant user's red-box as the site starts it: as that user, with the tenant's allow-lists."""
    work = localslurm.jobs_root() / f"tenant-{tenant.user}"
    for directory in (work, socket_of(tenant.user).parent):
        directory.mkdir(parents=True, exist_ok=True)
        shutil.chown(directory, tenant.user, tenant.user)
        directory.chmod(0o755)
    argv = ["runuser", "-u", tenant.user, "--", wlmvk, "red-box", "--socket", str(socket_of(tenant.user))]
    argv += ["--work-dir", str(work), "--state-dir", str(work / ".red-box")]
    argv += [f"--allowed-accounts={tenant.account}", f"--allowed-qos={tenant.qos}"]
    return argv


def pod(tenant: Tenant) -> Body:
    """A pod of the tenant's namespace on the tenants' cluster: it says who it runs as."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "whoami", "namespace": tenant.namespace},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"kubernetes.io/hostname": names.node_name(CLUSTER.name, PARTITION)},
            "tolerations": [
                {
                    "key": names.TAINT_KEY,
                    "operator": "Equal",
                    "value": names.TAINT_VALUE,
                    "effect": "NoSchedule",
                }
            ],
            "containers": [{"name": "main", "image": "busybox", "command": ["id", "-un"]}],
        },
    }


Kubectl = Callable[..., str]


class TenantsDemo:
    """The two tenants made, their pods run and shown with ``sacct``, everything removed."""

    def __init__(self, users: tuple[str, str], *, kubectl: Kubectl, progress: Progress, state: Path) -> None:
        self.tenants = tenants(users)
        self.kubectl = kubectl
        self.progress = progress
        self.state = state

    def associate(self, owner: str) -> None:
        """The tenants' associations, and the job owner's (``OWNER_ACCOUNT``): its examples run before
        any SlurmTenant, on this Slurm that enforces associations for every user."""
        with self.progress.step(f"tenants' accounts, QoS and users in Slurm ({ENFORCE} enforced)"):
            for tenant in self.tenants:
                associate(tenant, SLURM_CLUSTER)
            sacctmgr("add", "account", OWNER_ACCOUNT, f"cluster={SLURM_CLUSTER}")
            sacctmgr("add", "user", owner, f"account={OWNER_ACCOUNT}", f"cluster={SLURM_CLUSTER}")
            users = ",".join(dict.fromkeys([*(t.user for t in self.tenants), owner]))
            argv = ["sacctmgr", "show", "assoc", f"cluster={SLURM_CLUSTER}", f"users={users}"]
            self.show([*argv, "format=User,Account,QOS"])

    def run(self, timeout: float) -> list[str]:
        """Apply the tenants, run a pod in each namespace, print its job's sacct line; failures."""
        failures: list[str] = []
        with self.progress.step("two tenants: SlurmTenants, a pod in each namespace"):
            objects: list[Body] = [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": t.namespace}}
                for t in self.tenants
            ]
            objects += [slurmtenant(t, CLUSTER.name, [PARTITION]) for t in self.tenants]
            self.apply(objects, "tenants.json")
            self.wait_ready(timeout)
            self.kubectl("get", "slurmtenants", show=True)
            self.apply([pod(t) for t in self.tenants], "tenant-pods.json")
            for tenant in self.tenants:
                phase = self.wait_pod(tenant, timeout)
                self.kubectl("logs", "-n", tenant.namespace, "whoami", show=True, check=False)
                if phase != "Succeeded":
                    failures.append(f"tenant {tenant.name}: pod ended {phase!r}, expected 'Succeeded'")
                    continue
                self.show_job(tenant, timeout)
        return failures

    def cleanup(self) -> None:
        """Pods, namespaces and SlurmTenants deleted: tenancy off again (the rest goes at ``tear_down``)."""
        with self.progress.step("tenants removed (pods, namespaces, SlurmTenants)"):
            for tenant in self.tenants:
                self.kubectl("delete", "pods", "--all", "-n", tenant.namespace, "--wait=false", check=False)
                self.kubectl("delete", "namespace", tenant.namespace, "--wait=false", check=False)
            self.kubectl(
                "delete", "slurmtenants", *(t.name for t in self.tenants), "--wait=false", check=False
            )

    # --- helpers -------------------------------------------------------------------------------

    def apply(self, objects: list[Body], name: str) -> None:
        path = self.state / name
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=1))
        self.kubectl("apply", "-f", str(path), show=True)

    def wait_ready(self, timeout: float) -> None:
        """Each tenant checked by the tenants' kubelet and known to Slurm (its Ready condition True)."""
        ready = "jsonpath={.status.conditions[?(@.type=='Ready')].status}"

        def all_ready() -> bool:
            return all(
                self.kubectl("get", "slurmtenant", t.name, "-o", ready, check=False) == "True"
                for t in self.tenants
            )

        until(all_ready, timeout, "the SlurmTenants Ready")

    def wait_pod(self, tenant: Tenant, timeout: float) -> str:
        phase = ""

        def ended() -> bool:
            nonlocal phase
            args = ("get", "pod", "whoami", "-n", tenant.namespace, "-o", "jsonpath={.status.phase}")
            phase = self.kubectl(*args, check=False)
            return phase in {"Succeeded", "Failed"}

        try:
            until(ended, timeout, f"pod {tenant.namespace}/whoami")
        except RuntimeError:
            return phase or "timeout"
        return phase

    def show_job(self, tenant: Tenant, timeout: float) -> None:
        """``sacct`` of the pod's job, once accounting's row of it is complete: slurmdbd lags
        slurmctld, and its first row of a job has neither the QoS nor the partition."""
        path = "jsonpath={.metadata.annotations." + names.ANNOTATION_JOB_ID.replace(".", "\\.") + "}"
        job = self.kubectl("get", "pod", "whoami", "-n", tenant.namespace, "-o", path).strip()

        def complete() -> bool:
            probe = ["sacct", "-X", "-n", "-P", "-j", job, "-o", "QOS,Partition"]
            row = subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()
            qos, _, partition = row.partition("|")
            return qos not in {"", "Unknown"} and partition != ""

        until(complete, timeout, f"job {job}'s row in accounting")
        self.show(["sacct", "-X", "-j", job, "-o", SACCT_FIELDS])

    def show(self, argv: list[str]) -> None:
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        self.progress.command(argv, done.stdout)


def until(probe: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not after {timeout:.0f} s")
        time.sleep(0.5)


def use_own_slurm(state: Path) -> None:
    """This process (and all it starts) on the demo's own enforcing Slurm, recorded for ``down``."""
    variables = slurm_variables()
    os.environ.update(variables)
    (state / "tenants-slurm.json").write_text(json.dumps(variables))


def tear_down(state: Path) -> bool:
    """If the demo started a Slurm of its own: stopped (``dev/scripts/slurm-local down``) and its base
    removed (its database, with the tenants' associations, accounts and QoS, and the jobs' files:
    the next run starts afresh), and the tenants' socket directories; after the red-boxes stopped."""
    record = state / "tenants-slurm.json"
    if not record.exists():
        return False
    for directory in SOCKET_DIR.glob("tenant-*"):
        with contextlib.suppress(OSError):  # a socket left by a red-box that did not stop: kept
            directory.rmdir()
    variables = json.loads(record.read_text())
    subprocess.run(
        [str(localslurm.SCRIPT), "down"], env={**os.environ, **variables}, capture_output=True, check=True
    )
    shutil.rmtree(variables["WLMVK_SLURM_BASE"])
    record.unlink()
    return True
