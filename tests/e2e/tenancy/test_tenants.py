"""Two namespaces, two SlurmTenants: each namespace's pods run in Slurm as its own user, account and
QoS (as ``sacct`` reports them), and every escape is refused before any Slurm job exists.

Real Slurm enforcing associations (``tenant_slurm``), one red-box per tenant user (each run as
that user, with its site's allow-lists), the kubelet routing each namespace to its tenant's
red-box from its own ``--red-box USER=SOCKET``, the in-memory API server.
"""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from tests.e2e.kubelet.helpers import eventually, job_pod, unique
from tests.e2e.tenancy.rig import (
    Body,
    Rig,
    accounted,
    accounts_of,
    made,
    phase,
    pod_in,
    sacct,
    slurmjob_status,
    slurmtenant,
    start_three,
    submit_limit_holds_then_frees,
    waiting_for,
    warnings,
)
from tests.e2e.tenancy.tenants import TENANTS, A, B, Tenant, sacctmgr
from tests.faults import ownslurm
from tests.fixtures.apiserver import KUBECTL, RunningApiServer
from wlmvk.core import names
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobSpec
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.tenants import SLURMTENANTS
from wlmvk.operator.controller import SLURMJOBS
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm]

ON_BOTH = pytest.mark.kube_any(
    subject="the SlurmTenant CRD and RBAC as kube-apiserver serves them to the kubelet's ServiceAccount"
)
"""The escapes on both planes: on the real one the kubelet reads SlurmTenants as deployed."""
IN_RELEASES = pytest.mark.slurm_releases
"""In the release subset: the release's box enforcing associations is the tenants' Slurm."""


@ON_BOTH
@IN_RELEASES
async def test_each_namespace_runs_as_its_tenant_and_escapes_are_refused(
    tenancy: Rig, kube: KubeClient
) -> None:
    ran = {t: unique(t.name) for t in TENANTS}
    for tenant, name in ran.items():
        await kube.create(PODS, pod_in(tenant.namespace, name), namespace=tenant.namespace)
    escapes = {
        (A.namespace, unique("acct")): (
            "#!/bin/sh\n#SBATCH --account=acct-b\nid -un\n",
            "debug",
            "SlurmTenant team-a: #SBATCH --account=acct-b (line 2) is not account acct-a of this tenant",
        ),
        (A.namespace, unique("qos")): (
            "#!/bin/sh\n#SBATCH -q qos-b\nid -un\n",
            "debug",
            "SlurmTenant team-a: #SBATCH --qos=qos-b (line 2) is not an allowed QoS (allowed: qos-a)",
        ),
        (A.namespace, unique("uid")): (
            "#!/bin/sh\n#SBATCH --uid=0\nid -un\n",
            "debug",
            f"SlurmTenant team-a: #SBATCH --uid=0 (line 2) is not allowed: jobs of namespaces {A.namespace}"
            f" run as user {A.user}",
        ),
        (B.namespace, unique("part")): (
            "",
            "cpu",
            "SlurmTenant team-b: partition cpu of cluster test is not allowed (allowed: debug)",
        ),
        ("tenant-none", unique("none")): (
            "",
            "debug",
            "no SlurmTenant maps namespace tenant-none: tenancy is on, so its jobs may not run",
        ),
    }
    for (namespace, name), (batch, partition, _) in escapes.items():
        await kube.create(
            PODS, pod_in(namespace, name, partition=partition, batch=batch), namespace=namespace
        )

    job_ids = {}
    for tenant, name in ran.items():
        pod = await phase(kube, tenant.namespace, name, "Succeeded", "Failed")
        assert pod["status"]["phase"] == "Succeeded", pod["status"]
        job_ids[tenant] = pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID]
    wanted = sorted([job_ids[t], t.user, t.account, t.qos, "debug"] for t in TENANTS)

    async def accounted() -> list[list[str]] | None:
        # slurmdbd completes a job's row a moment after slurmctld ends it (QOS, partition).
        rows = sorted(sacct("-j", ",".join(job_ids.values()), "-o", "JobID,User,Account,QOS,Partition"))
        return rows if rows == wanted else None

    try:
        await eventually(accounted, timeout=60)
    except AssertionError:
        rows = sacct("-j", ",".join(job_ids.values()), "-o", "JobID,User,Account,QOS,Partition")
        pytest.fail(f"sacct -o JobID,User,Account,QOS,Partition: {rows}, not {wanted}")

    for (namespace, name), (_, _, message) in escapes.items():
        pod = await phase(kube, namespace, name, "Failed")
        assert (pod["status"]["reason"], pod["status"]["message"]) == ("TenantRefused", message)
        assert names.ANNOTATION_JOB_ID not in (pod["metadata"].get("annotations") or {})
        posted = await eventually(lambda at=namespace, pod=name: warnings(kube, at, pod))  # type: ignore[misc]
        assert ("TenantRefused", message) in posted
    # No Slurm job was made for any refused pod, by any user.
    assert made(*(name for _, name in escapes)) == set()


@IN_RELEASES
async def test_red_box_refuses_what_its_site_does_not_allow(tenancy: Rig) -> None:
    client = RedBoxClient(tenancy.boxes[B.user].socket, timeout=30)
    try:
        for script, why in (
            ("#!/bin/sh\n#SBATCH -A acct-a\ntrue\n",
             "--account=acct-a (line 2): account acct-a is not allowed by this red-box (allowed: acct-b)"),
            ("#!/bin/sh\n#SBATCH --uid=0\ntrue\n",
             "--uid=0 (line 2): a job runs as red-box's own user; --uid and --gid are not accepted"),
        ):  # fmt: skip
            name = unique("rbx")
            with pytest.raises(InvalidInput) as refused:
                await client.submit(
                    JobSpec(script=script, partition="debug", name=name, idempotency_key=name)
                )
            assert refused.value.message.endswith(why), refused.value.message
            assert made(name) == set()
    finally:
        await client.close()


def test_slurm_itself_refuses_an_account_outside_the_users_associations(
    tenant_slurm: ownslurm.Instance,
) -> None:
    # Defence in depth below wlmvk: B's user, submitting by hand to A's account.
    done = subprocess.run(
        ["runuser", "-u", B.user, "--", "sbatch", "--parsable", f"--account={A.account}", "-p", "debug",
         "--wrap=true", f"--chdir={tenant_slurm.jobs_root}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "Invalid account or account/partition combination specified" in done.stderr, done.stderr


@IN_RELEASES
async def test_slurmjobs_run_as_their_tenant_and_an_escape_fails_before_any_pod(
    operator: None, kube: KubeClient
) -> None:
    def slurmjob(name: str, batch: str) -> Body:
        return {
            "apiVersion": "wlm.sylabs.io/v1alpha1",
            "kind": "SlurmJob",
            "metadata": {"name": name, "namespace": A.namespace},
            "spec": {"batch": batch, "nodeSelector": {names.LABEL_PARTITION: "debug"}},
        }

    good, bad = unique("sj-ok"), unique("sj-escape")
    await kube.create(SLURMJOBS, slurmjob(good, "#!/bin/sh\nid -un\n"), namespace=A.namespace)
    escape = "#!/bin/sh\n#SBATCH -A acct-b\nid -un\n"
    await kube.create(SLURMJOBS, slurmjob(bad, escape), namespace=A.namespace)

    refused = await slurmjob_status(kube, A.namespace, bad, "Failed", "Succeeded")
    message = "SlurmTenant team-a: #SBATCH --account=acct-b (line 2) is not account acct-a of this tenant"
    assert (refused["status"], refused["reason"], refused["message"]) == ("Failed", "TenantRefused", message)
    assert ("TenantRefused", message) in await eventually(lambda: warnings(kube, A.namespace, bad))
    listed = await kube.list(PODS, namespace=A.namespace)
    assert not [pod for pod in listed.get("items") or [] if pod["metadata"]["name"].startswith(bad)]

    ran = await slurmjob_status(kube, A.namespace, good, "Succeeded", "Failed")
    assert ran["status"] == "Succeeded", ran
    wanted = [[str(ran["jobId"]), A.user, A.account, A.qos, "debug"]]

    async def accounted() -> list[list[str]] | None:
        rows = sacct("-j", str(ran["jobId"]), "-o", "JobID,User,Account,QOS,Partition")
        return rows if rows == wanted else None

    await eventually(accounted, timeout=60)
    assert made(bad) == set()


@IN_RELEASES
async def test_a_qos_limit_holds_one_tenants_pods_pending_while_the_others_run(
    tenancy: Rig, kube: KubeClient
) -> None:
    sacctmgr("modify", "qos", B.qos, "set", "MaxJobsPerUser=1")
    try:
        first, second, other = unique("lim1"), unique("lim2"), unique("free")
        await start_three(
            kube, ((B.namespace, first, 20), (B.namespace, second, 1), (A.namespace, other, 20))
        )
        held = waiting_for(kube, B.namespace, second, "QOSMaxJobsPerUserLimit")
        await eventually(held, timeout=60)
        await phase(kube, A.namespace, other, "Running")  # the other tenant's pod runs meanwhile
        still = await held()
        assert still is not None, "the held pod started while the limit held"
        assert still["status"]["phase"] == "Pending"
        # Slurm's reason, on the pod as kubectl describe shows it.
        waiting = still["status"]["containerStatuses"][0]["state"]["waiting"]
        assert waiting["reason"] == "QOSMaxJobsPerUserLimit", waiting
        assert names.ANNOTATION_JOB_ID in still["metadata"]["annotations"]  # queued in Slurm, held there
        for namespace, name in ((B.namespace, first), (B.namespace, second), (A.namespace, other)):
            assert (await phase(kube, namespace, name, "Succeeded", "Failed"))["status"][
                "phase"
            ] == "Succeeded"

        # It started once the first ended, not before (accounting's seconds).
        async def times() -> tuple[str, str] | None:
            rows = sacct("-a", "-S", "now-1hours", "--name", f"{first},{second}", "-o", "JobName,Start,End")
            seen = {row[0]: (row[1], row[2]) for row in rows}
            if len(seen) < 2 or "Unknown" in (*seen[first], *seen[second]):
                return None
            return seen[second][0], seen[first][1]

        started, ended = await eventually(times, timeout=60)
        assert started >= ended, (started, ended)
    finally:
        sacctmgr("modify", "qos", B.qos, "set", "MaxJobsPerUser=-1")


SPIN = "while :; do :; done"
TALK = "id -un; sleep 8; echo second"
"""A pod's script: its first line, then after a while (``kubectl logs -f`` meanwhile) another."""


async def followed(apiserver: RunningApiServer, namespace: str, name: str) -> list[bytes]:
    """What ``kubectl logs -f`` prints of a running pod, line by line, until it exits 0 (the pod ended)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(KUBECONFIG=str(apiserver.kubeconfig), HOME=str(apiserver.home))
    follow = await asyncio.create_subprocess_exec(
        KUBECTL, "logs", "-f", "-n", namespace, name, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert follow.stdout is not None
    try:
        lines = [await asyncio.wait_for(follow.stdout.readline(), 60) for _ in range(2)]
        lines.append(await asyncio.wait_for(follow.stdout.read(), 60))
        assert await asyncio.wait_for(follow.wait(), 30) == 0
    finally:
        if follow.returncode is None:
            follow.kill()
            await follow.wait()
    return lines


@IN_RELEASES
async def test_logs_exec_and_top_reach_each_tenants_job_through_its_red_box(
    tenancy: Rig, apiserver: RunningApiServer, kube: KubeClient
) -> None:
    spinning = {t: unique(f"spin-{t.name}") for t in TENANTS}
    said = {t: unique(f"say-{t.name}") for t in TENANTS}
    for tenant in TENANTS:
        spin = job_pod(spinning[tenant], SPIN)
        spin["metadata"]["namespace"] = tenant.namespace
        await kube.create(PODS, spin, namespace=tenant.namespace)
        talk = pod_in(tenant.namespace, said[tenant])
        talk["spec"]["containers"][0]["command"] = ["sh", "-c", TALK]
        await kube.create(PODS, talk, namespace=tenant.namespace)

    async def follow(tenant: Tenant) -> list[bytes]:
        await phase(kube, tenant.namespace, said[tenant], "Running")
        return await followed(apiserver, tenant.namespace, said[tenant])

    try:
        # Followed from the first line on, both at once: the tenant's user, then the line written after.
        lines = await asyncio.gather(*(follow(tenant) for tenant in TENANTS))
        assert lines == [[f"{tenant.user}\n".encode(), b"second\n", b""] for tenant in TENANTS]
        for tenant in TENANTS:
            await phase(kube, tenant.namespace, said[tenant], "Succeeded")
            logs = await apiserver.kubectl("logs", "-n", tenant.namespace, said[tenant])
            assert (logs.returncode, logs.stdout) == (0, f"{tenant.user}\nsecond\n"), logs.stderr
            await phase(kube, tenant.namespace, spinning[tenant], "Running")
            execd = await apiserver.kubectl(
                "exec", "-n", tenant.namespace, spinning[tenant], "--", "id", "-un"
            )
            assert (execd.returncode, execd.stdout) == (0, f"{tenant.user}\n"), execd.stderr

        for tenant in TENANTS:

            async def busy(tenant: Tenant = tenant) -> bool:
                top = await apiserver.kubectl(
                    "top", "pod", "-n", tenant.namespace, spinning[tenant], "--no-headers"
                )
                assert top.returncode == 0, top.stderr
                cpu = top.stdout.split()[1]
                return (cpu.endswith("m") and int(cpu[:-1]) >= 100) or (cpu.isdigit() and int(cpu) >= 1)

            await eventually(busy, timeout=120, every=2)
    finally:
        for tenant in TENANTS:
            await apiserver.kubectl("delete", "pod", "-n", tenant.namespace, spinning[tenant], "--wait=false")


@IN_RELEASES
async def test_a_submit_limit_holds_a_pod_pending_with_slurms_reason_until_it_frees(
    tenancy: Rig, kube: KubeClient
) -> None:
    await submit_limit_holds_then_frees(kube)


async def test_a_restarted_kubelet_follows_each_tenants_jobs_and_submits_each_pod_once(
    tenancy: Rig, kube: KubeClient
) -> None:
    running = {t: unique(f"before-{t.name}") for t in TENANTS}
    for tenant, name in running.items():
        pod = pod_in(tenant.namespace, name)
        pod["spec"]["containers"][0]["command"] = ["sleep", "8"]
        await kube.create(PODS, pod, namespace=tenant.namespace)
    ids = {}
    for tenant, name in running.items():
        pod = await phase(kube, tenant.namespace, name, "Running")
        ids[name] = pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID]
    await tenancy.kubelet.close()
    # Made while no kubelet runs: looked up by key in its tenant's red-box, then submitted there.
    meanwhile = {t: unique(f"during-{t.name}") for t in TENANTS}
    for tenant, name in meanwhile.items():
        await kube.create(PODS, pod_in(tenant.namespace, name), namespace=tenant.namespace)
    await tenancy.start_kubelet()

    for tenant in TENANTS:
        for name in (running[tenant], meanwhile[tenant]):
            pod = await phase(kube, tenant.namespace, name, "Succeeded", "Failed")
            assert pod["status"]["phase"] == "Succeeded", pod["status"]
            job_id = pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID]
            assert ids.get(name, job_id) == job_id
            assert await accounted(name, "JobID,User,Account") == [[job_id, tenant.user, tenant.account]], (
                name
            )


@pytest.mark.kube_any(
    subject="the SlurmTenant CRD's status subresource and printer columns as kube-apiserver serves them"
)
@IN_RELEASES
async def test_status_says_whether_slurm_knows_each_tenants_user_account_and_qos(
    tenancy: Rig, tenant_slurm: ownslurm.Instance, apiserver: RunningApiServer, kube: KubeClient
) -> None:
    """The kubelet asks each tenant user's red-box what Slurm knows of it: a misspelt account
    shows False on ``kubectl get slurmtenants``, naming the account; fixed, it turns True."""
    typo = Tenant("team-typo", "tenant-typo", A.user, "acct-aa", A.qos)
    await kube.create(SLURMTENANTS, slurmtenant(typo, ["debug"]))

    async def ready(name: str, status: str, generation: int = 1) -> Body | None:
        body = await kube.get(SLURMTENANTS, name)
        conditions = {c["type"]: c for c in (body.get("status") or {}).get("conditions") or []}
        seen = (body.get("status") or {}).get("observedGeneration")
        return body if seen == generation and conditions.get("Ready", {}).get("status") == status else None

    def table(body: Body) -> dict[str, tuple[str, str, str]]:
        (entry,) = body["status"]["clusters"]
        assert (entry["cluster"], entry["observedGeneration"]) == ("test", body["metadata"]["generation"])
        return {c["type"]: (c["status"], c["reason"], c["message"]) for c in entry["conditions"]}

    known = ("True", "Known", "")
    for tenant in TENANTS:
        body = await eventually(lambda t=tenant: ready(t.name, "True"), timeout=60)  # type: ignore[misc]
        assert table(body) == {"UserKnown": known, "AccountKnown": known, "QoSKnown": known, "Ready": known}

    has = ", ".join(accounts_of(A.user, tenant_slurm.cluster))
    why = f"user {A.user} has no association with account acct-aa (has: {has})"
    body = await eventually(lambda: ready(typo.name, "False"), timeout=60)
    assert table(body) == {
        "UserKnown": known,
        "AccountKnown": ("False", "AccountUnknown", why),
        "QoSKnown": known,
        "Ready": ("False", "AccountUnknown", why),
    }
    (summary,) = body["status"]["conditions"]
    assert (summary["type"], summary["status"], summary["reason"]) == ("Ready", "False", "AccountUnknown")
    assert summary["message"] == f"test: {why}"

    shown = await apiserver.kubectl("get", "slurmtenants", "-o", "wide")
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line.split() for line in shown.stdout.splitlines()[1:]}
    assert rows[typo.name][1:3] == [A.user, "acct-aa"]
    assert rows[typo.name][5:7] == ["False", "AccountUnknown"]
    assert f"test: {why}" in shown.stdout
    for tenant in TENANTS:
        assert rows[tenant.name][5:7] == ["True", "Known"]

    await kube.patch(SLURMTENANTS, typo.name, {"spec": {"account": A.account}})
    fixed = await eventually(lambda: ready(typo.name, "True", generation=2), timeout=30)
    assert table(fixed)["AccountKnown"] == known

    # A red-box answers about its own user only.
    client = RedBoxClient(tenancy.boxes[B.user].socket, timeout=30)
    try:
        with pytest.raises(InvalidInput) as refused:
            await client.associations(A.user)
        assert str(refused.value) == (
            f"Associations: red-box answers about its own user {B.user} only, not {A.user}"
        )
    finally:
        await client.close()
